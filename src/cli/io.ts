import { eq } from 'drizzle-orm';
import { shops as shopsTable } from '../db/schema.js';
import type { ServiceContext } from '../services/context.js';

/** Where a command writes: its output (stdout) and its messages (stderr), a line at a time. */
export type Out = { out: (s: string) => void; err: (s: string) => void };

/** A refusal found while running a command: exit 1 with its message. */
export class CliRefusal extends Error {}

/** A command given wrongly: exit 2 with its message and the usage. */
export class UsageError extends Error {}

/** A shop as the platform commands need it, or a refusal naming the domain. */
export async function knownShop(ctx: ServiceContext, domain: string) {
  const [shop] = await ctx.db.orm.select().from(shopsTable).where(eq(shopsTable.domain, domain));
  if (!shop) throw new CliRefusal(`unknown shop "${domain}": this database has no such shop (see: shops list)`);
  return shop;
}
