import type { Batcher } from './batcher.js';
import type { Database } from './client.js';
import { backgroundContractWrites, contractWrites } from './contractWrites.js';
import { contractRows, contractTexts } from './contractRows.js';
import { keyRows } from './keyRows.js';
import { grantRows } from './grantRows.js';

/** Every statement batched over concurrent callers, by name: what /metrics reports (inputs / batches = batch size). */
export function batchedStatements(db: Database): Record<string, Batcher<never, unknown>> {
  const contracts = contractRows(db);
  const texts = contractTexts(db);
  const keys = keyRows(db);
  return {
    keysByDigest: keys.byDigest,
    keyStates: keys.states,
    grantStates: grantRows(db).states,
    contractsOfShops: contracts.ofShop,
    contractsWithKeyStates: contracts.withKeyState,
    contractsWithGrantStates: contracts.withGrantState,
    // A GET's reads (the json columns as text).
    contractTextsOfShops: texts.ofShop,
    contractTextsWithKeyStates: texts.withKeyState,
    contractTextsWithGrantStates: texts.withGrantState,
    contractChanges: contractWrites(db),
    // Changes no client waits on (billing's outcomes).
    backgroundContractChanges: backgroundContractWrites(db),
  } as unknown as Record<string, Batcher<never, unknown>>;
}
