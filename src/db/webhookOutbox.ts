import type { Database } from './client.js';

/**
 * The outbox of outgoing webhooks, as the dispatcher works it: claim due deliveries (FOR UPDATE SKIP LOCKED, so
 * instances never claim one twice), and record what each attempt came to. The rows are written by the change path
 * (contractEventConsumers.ts) in the commit of their event.
 */

/** A claimed delivery with what sending it needs: its endpoint (url, secrets) and its event. */
export type ClaimedDelivery = {
  id: string;
  endpointId: string;
  contractId: string | null;
  eventId: string | null;
  contractVersion: number | null;
  type: string;
  /** The contract right after the event, as JSON text. */
  contract: string;
  test: boolean;
  /** This attempt's number (1 for the first). */
  attempts: number;
  createdAt: Date;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  event: {
    at: Date;
    actorType: string;
    actorKeyFingerprint: string | null;
    actorId: string | null;
    fromStatus: string;
    toStatus: string;
    data: Record<string, unknown>;
  } | null;
};

// The claim is svc_claim_webhook_deliveries (src/db/functions): due deliveries oldest first, in order per
// contract and endpoint, of enabled endpoints, SKIP LOCKED, walked along the due index whatever the statistics say,
// each with its endpoint and event; what it walks past and cannot send yet it parks until it can go.
const CLAIM = `
  SELECT id::text AS id, endpoint_id::text AS "endpointId", contract_id::text AS "contractId", event_id::text AS "eventId",
         contract_version AS "contractVersion", type, contract, test, attempts, created_at AS "createdAt",
         url, secret, previous_secret AS "previousSecret", previous_secret_expires_at AS "previousSecretExpiresAt",
         event_at AS "eventAt", actor_type AS "actorType", actor_key_fingerprint AS "actorKeyFingerprint", actor_id AS "actorId",
         from_status AS "fromStatus", to_status AS "toStatus", event_data AS "eventData"
    FROM svc_claim_webhook_deliveries($1, $2, $3) AS c
   -- In id order (the order they were written); c.id is the bigint, not the text it is given out as.
   ORDER BY c.id`;

export async function claimDueDeliveries(db: Database, now: Date, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const rows = await db.prepared<Record<string, unknown>>('svc_claim_webhook_deliveries', CLAIM, [now, limit, new Date(now.getTime() + leaseMs)]);
  return rows.map((r) => ({
    id: r.id as string,
    endpointId: r.endpointId as string,
    contractId: r.contractId as string | null,
    eventId: r.eventId as string | null,
    contractVersion: r.contractVersion as number | null,
    type: r.type as string,
    contract: r.contract as string,
    test: r.test as boolean,
    attempts: r.attempts as number,
    createdAt: r.createdAt as Date,
    url: r.url as string,
    secret: r.secret as string,
    previousSecret: r.previousSecret as string | null,
    previousSecretExpiresAt: r.previousSecretExpiresAt as Date | null,
    event: r.eventAt
      ? {
          at: r.eventAt as Date,
          actorType: r.actorType as string,
          actorKeyFingerprint: r.actorKeyFingerprint as string | null,
          actorId: r.actorId as string | null,
          fromStatus: r.fromStatus as string,
          toStatus: r.toStatus as string,
          data: r.eventData as Record<string, unknown>,
        }
      : null,
  }));
}

/** What an attempt came to, and what follows for the delivery. */
export type AttemptOutcome = {
  deliveryId: string;
  endpointId: string;
  at: Date;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
  /** succeeded; pending (another attempt at nextAttemptAt); failed (no attempt left, or the endpoint is gone). */
  next: 'succeeded' | 'pending' | 'failed';
  nextAttemptAt: Date | null;
  /** The receiver answered 410 Gone: the endpoint is disabled. */
  gone: boolean;
};

const RECORD_ATTEMPTS = `
  WITH r AS (
    SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::int[], $4::int[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
           AS r(id, at, status_code, duration_ms, error, response_body, next, next_attempt_at)
  ), logged AS (
    INSERT INTO webhook_attempts (delivery_id, at, status_code, duration_ms, error, response_body)
    SELECT id, at, status_code, duration_ms, error, response_body FROM r
  )
  UPDATE webhook_deliveries d
     SET status = r.next, next_attempt_at = COALESCE(r.next_attempt_at, d.next_attempt_at), lease_until = NULL,
         last_status_code = r.status_code, last_error = r.error,
         finished_at = CASE WHEN r.next = 'pending' THEN NULL ELSE r.at END
    FROM r WHERE d.id = r.id`;

// An endpoint that answered well is not failing; one that failed starts (or continues) its failing run, and is
// disabled when the receiver is gone (410) or the run has lasted 5 days.
const ENDPOINTS_SUCCEEDED = `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ANY($1::uuid[]) AND failing_since IS NOT NULL`;
const ENDPOINTS_FAILED = `
  UPDATE webhook_endpoints w
     SET failing_since = COALESCE(w.failing_since, f.at),
         status = CASE WHEN f.gone OR COALESCE(w.failing_since, f.at) <= f.at - ($4::bigint * interval '1 millisecond') THEN 'disabled' ELSE w.status END,
         disabled_reason = CASE WHEN f.gone THEN 'gone'
                                WHEN COALESCE(w.failing_since, f.at) <= f.at - ($4::bigint * interval '1 millisecond') THEN 'failing'
                                ELSE w.disabled_reason END,
         disabled_at = CASE WHEN f.gone OR COALESCE(w.failing_since, f.at) <= f.at - ($4::bigint * interval '1 millisecond') THEN f.at ELSE w.disabled_at END
    FROM unnest($1::uuid[], $2::timestamptz[], $3::bool[]) AS f(id, at, gone)
   WHERE w.id = f.id AND w.status = 'enabled'`;

/** Records a batch of attempts and their consequences, in one transaction. */
export async function recordAttempts(db: Database, outcomes: AttemptOutcome[], disableAfterFailingMs: number): Promise<void> {
  if (outcomes.length === 0) return;
  const col = <T>(f: (o: AttemptOutcome) => T) => outcomes.map(f);
  // Per endpoint: one success in the batch means it works; otherwise its latest failure counts.
  const succeeded = new Set(outcomes.filter((o) => o.next === 'succeeded').map((o) => o.endpointId));
  const failed = new Map<string, { at: Date; gone: boolean }>();
  for (const o of outcomes) {
    if (o.next === 'succeeded' || succeeded.has(o.endpointId)) continue;
    const prev = failed.get(o.endpointId);
    failed.set(o.endpointId, { at: prev && prev.at > o.at ? prev.at : o.at, gone: (prev?.gone ?? false) || o.gone });
  }
  await db.transaction(async (run) => {
    await run(RECORD_ATTEMPTS, [
      col((o) => o.deliveryId),
      col((o) => o.at),
      col((o) => o.statusCode),
      col((o) => o.durationMs),
      col((o) => o.error),
      col((o) => o.responseBody),
      col((o) => o.next),
      col((o) => o.nextAttemptAt),
    ]);
    if (succeeded.size) await run(ENDPOINTS_SUCCEEDED, [[...succeeded]]);
    if (failed.size) {
      const entries = [...failed];
      await run(ENDPOINTS_FAILED, [entries.map(([id]) => id), entries.map(([, f]) => f.at), entries.map(([, f]) => f.gone), disableAfterFailingMs]);
    }
  });
}

/** Deliveries not yet finished, and how long the oldest has waited (for /metrics). */
export async function outboxBacklog(db: Database, now: Date): Promise<{ depth: number; oldestAgeMs: number }> {
  const [row] = await db.prepared<{ depth: string; oldest: Date | null }>(
    'svc_webhook_backlog',
    `SELECT count(*) AS depth, min(created_at) AS oldest FROM webhook_deliveries WHERE status IN ('pending', 'delivering')`,
    [],
  );
  return { depth: Number(row.depth), oldestAgeMs: row.oldest ? Math.max(0, now.getTime() - new Date(row.oldest).getTime()) : 0 };
}

/**
 * Deletes finished deliveries (and their attempts) created before `before`, oldest first, a batch at a time; returns
 * how many. Walks the primary key from the oldest (ids grow with created_at) and stops at the first batch that
 * reaches a newer one, so it needs no index of its own.
 */
export async function purgeDeliveries(db: Database, before: Date, batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await db.prepared<{ id: string; old: boolean }>(
      'svc_purge_webhook_deliveries',
      `WITH oldest AS (SELECT id, created_at, status FROM webhook_deliveries ORDER BY id LIMIT $2),
            gone AS (DELETE FROM webhook_deliveries d USING oldest o
                      WHERE d.id = o.id AND o.created_at < $1 AND o.status IN ('succeeded', 'failed') RETURNING d.id)
       SELECT (SELECT count(*) FROM gone)::int AS deleted, coalesce(bool_and(created_at < $1), false) AS old FROM oldest`,
      [before, batch],
    );
    const [{ deleted, old }] = rows as unknown as { deleted: number; old: boolean }[];
    total += deleted;
    // A batch with a newer delivery in it is the end of what is old enough (unfinished old ones stay, to be sent).
    if (!old || deleted === 0) return total;
  }
}
