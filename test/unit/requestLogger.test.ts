import { describe, expect, it } from 'vitest';
import { createLogger, requestLoggerFactory } from '../../src/http/logging.js';

// req.log is made on first use; until then and after, it behaves as the pino child it stands for.
describe('a request logger', () => {
  const setup = () => {
    const lines: string[] = [];
    const parent = createLogger({ level: 'info', sink: { write: (l: string) => lines.push(l) } });
    return { lines, log: requestLoggerFactory(parent, { requestId: 'r-1' }, {}) };
  };

  it('writes with its bindings, at its parent level', () => {
    const { lines, log } = setup();
    expect(log.level).toBe('info');
    log.debug('hidden');
    log.warn({ n: 1 }, 'shown');
    expect(lines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: 40, requestId: 'r-1', n: 1, msg: 'shown' })]);
  });

  it('answers the level it was given', () => {
    const { lines, log } = setup();
    log.level = 'error';
    expect(log.level).toBe('error');
    log.warn('hidden');
    expect(lines).toEqual([]);
  });
});
