import { z } from 'zod';
import { defineEditOperation, EditRejected, lineIndex } from './operation.js';
import { LineId } from './fields.js';

export const removeLine = defineEditOperation({
  op: 'remove_line',
  input: z.strictObject({ op: z.literal('remove_line'), lineId: LineId }).meta({ title: 'RemoveLine', description: 'Remove a line. The last line cannot be removed: cancel the contract instead.' }),
  apply(contract, input) {
    const i = lineIndex(contract, input.lineId);
    if (contract.lines.length === 1) throw new EditRejected('the last line cannot be removed: cancel the contract instead');
    const before = contract.lines[i];
    return { contract: { ...contract, lines: contract.lines.filter((_, k) => k !== i) }, change: { op: 'remove_line', lineId: before.id, before, after: null } };
  },
});
