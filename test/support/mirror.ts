import type { PlatformContract } from '../../src/db/mirror.js';
import type { ContractRow } from '../../src/db/schema.js';

/** A contract row as a platform would hand it to the mirror at `revision` (svc's own fields left out). */
export function mirrorOf(row: ContractRow, revision: string, at: Date): PlatformContract {
  const { pausedAt: _p, resumeAt: _r, cancelledAt: _c, cancellationReason: _cr, id, createdAt, shopId: _s, updatedAt: _u, version: _v, platformRevision: _pr, platformUpdatedAt: _pu, callLease: _l, callLeaseUntil: _lu, ...state } = row;
  return { id, createdAt, state, mark: { platformRevision: revision, platformUpdatedAt: at } };
}
