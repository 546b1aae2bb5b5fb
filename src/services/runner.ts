import { randomUUID } from 'node:crypto';
import { lastSucceededAttempt } from '../db/billingRows.js';
import { contractRows, contractTexts, type ContractReads } from '../db/contractRows.js';
import type { ContractText } from '../db/contractColumns.js';
import type { IdempotencyRecord } from '../db/contractWrites.js';
import { isDatabaseUnavailable, type RunSql } from '../db/client.js';
import type { ContractRow } from '../db/schema.js';
import type { AttemptState } from '../domain/billing.js';
import type { CommandDefinition } from '../domain/commands/command.js';
import { checkCommand, type Request } from '../domain/commands/plan.js';
import { COMMANDS, type Command, type CommandName } from '../domain/commands/registry.js';
import { assertContractId } from '../domain/contractId.js';
import { MESSAGES, parseInput, ServiceError } from '../domain/errors.js';
import { assertAllows, type Permission } from '../domain/permissions.js';
import { mapInLanes } from '../lanes.js';
import { catalogFor } from './catalog.js';
import { changeContract, changeLockedBatch, type BatchChange, type CommittedChange } from './changeContract.js';
import type { ServiceContext } from './context.js';
import type { Caller, Principal, ShopPrincipal } from './principal.js';
import { submitBillingAttempt } from './submitBillingAttempt.js';

/**
 * THE command runner: every change of a contract, whoever asks (the API, MCP, the admin, the workers, bulk jobs),
 * goes through `runCommand` (one contract) or `runCommandBatch` (many). It applies the command's policy, declared in
 * the command's own module (domain/commands): who may ask for it (its actors, and for a shop's principal its
 * permission), what it needs resolved before deciding (a fresh billing attempt id, the shop's catalog), and what
 * follows its commit (a billing attempt handed to the gateway). Then the change path (services/changeContract.ts)
 * plans, carries out and writes it, in either mode.
 *
 * The principal is resolved before anything here runs (services/operations.ts for a request's caller; the workers'
 * principals are svc's own), so nothing is decided for an unconfirmed caller.
 */

/**
 * A request's first step when it reads one contract: the caller's principal (with `needs` checked and the caller
 * admitted) and the contract, of the principal's shop or 404. For a caller whose key this process already knows, the
 * key's state comes in the same statement as the contract (one round trip instead of two on the hottest requests: a
 * GET of a contract, an action, an edit); the principal is resolved from it before anything else is looked at, and
 * a contract of another shop is never returned (the read joins the key's shop). `text`: the json columns as the
 * database's text (a GET passes them on as they are).
 */
export async function withContract(
  ctx: ServiceContext,
  caller: Caller,
  contractId: string,
  needs: readonly Permission[],
): Promise<{ principal: ShopPrincipal; row: ContractRow }>;
export async function withContract(
  ctx: ServiceContext,
  caller: Caller,
  contractId: string,
  needs: readonly Permission[],
  text: 'text',
): Promise<{ principal: ShopPrincipal; row: ContractText<ContractRow> }>;
export async function withContract(
  ctx: ServiceContext,
  caller: Caller,
  contractId: string,
  needs: readonly Permission[],
  text?: 'text',
): Promise<{ principal: ShopPrincipal; row: ContractRow | ContractText<ContractRow> }> {
  assertContractId(contractId);
  const rows = (text ? contractTexts(ctx.db) : contractRows(ctx.db)) as ContractReads<ContractRow | ContractText<ContractRow>>;
  let principal: ShopPrincipal;
  let row: ContractRow | ContractText<ContractRow> | null | undefined;
  const keyId = caller.pendingKeyId;
  const grantId = caller.pendingGrantId;
  if (keyId || grantId) {
    const joined = keyId ? await rows.withKeyState.load({ keyId, contractId }) : await rows.withGrantState.load({ grantId: grantId!, contractId });
    principal = await caller.principal(ctx, needs, joined);
    row = joined!.contract;
  } else {
    principal = await caller.principal(ctx, needs);
    row = await rows.ofShop.load({ shopId: principal.shopId, contractId });
  }
  if (!row) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  return { principal, row };
}

/** A command as a caller asks for it: a name and the input as the client gave it (validated here). */
export type CommandRequest = { name: CommandName; input: unknown };

export type RunOptions = {
  /** A request's Idempotency-Key claim: its result commits with the change. */
  record?: IdempotencyRecord;
  /** Decide and carry out as a preview: nothing changes anywhere. */
  preview?: boolean;
  /** No client waits (a billing outcome): the background group commit. */
  background?: boolean;
  /** Skip a contract another writer holds instead of waiting (sweeps): null answer then. */
  skipLocked?: boolean;
};

/** The policy's part a principal must pass: its actor may ask for the command, and a shop's has the permission. */
export function authorizeCommand(principal: Principal, name: CommandName): void {
  authorize(principal, COMMANDS[name] as CommandDefinition<string, unknown, readonly string[]>);
}

function authorize(principal: Principal, def: CommandDefinition<string, unknown, readonly string[]>): void {
  if (!(def.policy.actors as readonly string[]).includes(principal.actor.type)) {
    throw new ServiceError('invalid_request', `${def.name} cannot be asked for by ${principal.actor.type}.`);
  }
  if (principal.kind === 'shop') assertAllows(principal.permissions, def.policy.permission, principal.who);
}

/**
 * A client's input as the command's decide takes it: validated by the command (its own `fromClient`, else its input
 * schema), checked against the time, then completed with what the policy says it needs.
 */
async function commandOf(ctx: ServiceContext, target: { shopId: string; contractId: string }, request: CommandRequest): Promise<Command> {
  const { shopId } = target;
  const def = COMMANDS[request.name] as CommandDefinition<string, unknown, readonly string[]>;
  const input = (def.fromClient ? def.fromClient(request.input) : parseInput(def.input, request.input ?? {})) as Record<string, unknown>;
  const command = { name: request.name, input } as Command;
  checkCommand(command, ctx.clock.now());
  for (const n of def.policy.needs ?? []) {
    if (n === 'attempt_id') {
      if (!ctx.billing) throw new ServiceError('invalid_state', 'Billing is turned off on this service (BILLING=off): nothing can be billed.');
      input.attemptId = randomUUID();
    } else if (n === 'catalog') {
      const edit = input as { operations: Parameters<typeof catalogFor>[2]; catalog: unknown; newIds: string[] };
      // In platform mode the platform prices a draft: there is no catalog of svc's own.
      edit.catalog = ctx.platform.callsOut ? null : await catalogFor(ctx, shopId, edit.operations);
      edit.newIds = edit.operations.map(() => randomUUID());
    } else if (n === 'billed_now') {
      const billed = await lastSucceededAttempt(ctx.db, { shopId, contractId: target.contractId, trigger: 'bill_now' });
      input.billedNow = billed ? { at: billed.at, orderName: billed.orderName } : null;
    }
  }
  return command;
}

/** What a command's commit leads to, run after the commit (never inside it). */
async function afterCommit(ctx: ServiceContext, command: Command, committed: CommittedChange | null): Promise<void> {
  if (COMMANDS[command.name].policy.after !== 'hand_to_gateway' || !committed?.changed) return;
  const attempt = committed.row.billingLastAttempt;
  if (!attempt || attempt.status !== 'pending') return;
  // A gateway that cannot take it now leaves it pending; the billing worker hands it over again.
  await submitBillingAttempt(ctx, committed.row, attempt).catch((err: unknown) =>
    ctx.warn?.({ err: { message: (err as Error).message }, attemptId: attempt.id }, 'could not hand a billing attempt to the gateway'),
  );
}

/**
 * One command on one contract. `target.read`: the contract as the caller read it (the change starts from it), for a
 * shop's principal always a contract of its shop. Answers the change as committed (null only with skipLocked).
 */
export async function runCommand(
  ctx: ServiceContext,
  principal: Principal,
  target: { shopId: string; contractId: string; read?: ContractRow },
  request: CommandRequest | null,
  opts: RunOptions = {},
): Promise<CommittedChange | null> {
  if (principal.kind === 'shop' && principal.shopId !== target.shopId) throw new ServiceError('not_found', 'No subscription contract with this id exists for this shop.');
  let command: Command | null = null;
  if (request) {
    authorize(principal, COMMANDS[request.name] as CommandDefinition<string, unknown, readonly string[]>);
    command = await commandOf(ctx, target, request);
  }
  return runDecided(ctx, principal, target, command, opts);
}

/**
 * runCommand for a command already in its decided form (svc's own workers build theirs: a billing attempt's id, an
 * outcome): the policy's actors still apply.
 */
export async function runDecided(
  ctx: ServiceContext,
  principal: Principal,
  target: { shopId: string; contractId: string; read?: ContractRow },
  command: Command | null,
  opts: RunOptions = {},
): Promise<CommittedChange | null> {
  if (command) authorize(principal, COMMANDS[command.name] as CommandDefinition<string, unknown, readonly string[]>);
  const committed = await changeContract(ctx, {
    shopId: target.shopId,
    contractId: target.contractId,
    read: target.read,
    request: command ? { command, actor: principal.actor } : null,
    record: opts.preview ? undefined : opts.record,
    preview: opts.preview,
    background: opts.background,
    skipLocked: opts.skipLocked,
  });
  if (command && !opts.preview) await afterCommit(ctx, command, committed);
  return committed;
}

/** One contract's part of a batch: its row, what was asked, what was committed, or why it could not be. */
export type BatchOutcome = BatchChange;

/**
 * One command, decided per contract, over many contracts (svc's workers): in standalone mode the contracts `lock`
 * takes are planned and written in one transaction (SKIP LOCKED: rows another writer holds are left for later); in
 * platform mode, where each change is carried out on the platform first, `claim` takes them and each goes through the
 * change path on its own, `lanes` at a time. One contract's refusal never stops the others: a locked batch whose
 * statement fails for a reason other than the database being unreachable (one row the statement refuses, say) is
 * claimed and run contract by contract instead (`onLockFailure` is told). `after`: the follow-ups of the commits
 * (billing attempts to hand over), as a promise of how many were handed over, so a caller can overlap them with its
 * next batch.
 */
export async function runCommandBatch(
  ctx: ServiceContext,
  principal: Principal,
  targets: { lock: (run: RunSql) => Promise<ContractRow[]>; claim: () => Promise<ContractRow[]>; lanes: number },
  commandOfRow: (row: ContractRow) => Command,
  opts: { onLockFailure?: (err: unknown) => void } = {},
): Promise<{ outcomes: BatchOutcome[]; after: (onFailure?: (attemptId: string, err: unknown) => void) => Promise<number> }> {
  const requestOf = (row: ContractRow): Request & object => {
    const command = commandOfRow(row);
    authorize(principal, COMMANDS[command.name] as CommandDefinition<string, unknown, readonly string[]>);
    return { command, actor: principal.actor };
  };
  const each = async () =>
    mapInLanes(await targets.claim(), targets.lanes, async (row): Promise<BatchOutcome> => {
      try {
        const request = requestOf(row);
        return { row, request, committed: await changeContract(ctx, { shopId: row.shopId, contractId: row.id, read: row, request }) };
      } catch (error) {
        return { row, request: null, committed: null, error };
      }
    });
  let outcomes: BatchOutcome[];
  if (ctx.platform.callsOut) outcomes = await each();
  else {
    try {
      outcomes = await changeLockedBatch(ctx, targets.lock, requestOf);
    } catch (err) {
      if (isDatabaseUnavailable(err)) throw err;
      opts.onLockFailure?.(err);
      outcomes = await each();
    }
  }
  return { outcomes, after: (onFailure) => handOver(ctx, outcomes, targets.lanes, onFailure) };
}

/** The billing attempts a batch's commits created, handed to the gateway `lanes` at a time: how many were taken. */
async function handOver(ctx: ServiceContext, outcomes: BatchOutcome[], lanes: number, onFailure?: (attemptId: string, err: unknown) => void): Promise<number> {
  const attempts: { row: ContractRow; attempt: AttemptState }[] = [];
  for (const o of outcomes) {
    if (!o.request || COMMANDS[o.request.command.name].policy.after !== 'hand_to_gateway' || !o.committed?.changed) continue;
    const a = o.committed.row.billingLastAttempt;
    if (a?.status === 'pending') attempts.push({ row: o.committed.row, attempt: a });
  }
  return submitAttempts(ctx, attempts, lanes, onFailure);
}

/** Hands attempts to the gateway, `lanes` at a time; a failure leaves that one pending (handed over again later). */
export async function submitAttempts(
  ctx: ServiceContext,
  attempts: { row: ContractRow; attempt: Pick<AttemptState, 'id' | 'cycleDate' | 'attempt' | 'amount'> }[],
  lanes: number,
  onFailure?: (attemptId: string, err: unknown) => void,
): Promise<number> {
  const done = await mapInLanes(attempts, lanes, async (a) => {
    try {
      await submitBillingAttempt(ctx, a.row, a.attempt);
      return true;
    } catch (err) {
      onFailure?.(a.attempt.id, err);
      return false;
    }
  });
  return done.filter(Boolean).length;
}
