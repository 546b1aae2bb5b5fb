import { describe, expect, it } from 'vitest';
import { uniqueShop } from './support/app.js';
import { cliHarness } from './support/cliHarness.js';

/**
 * The test gateway's CLI: `contracts seed --payment` and `contracts set-payment`, against the test database (the
 * test schema on PostgreSQL, or an embedded data directory made from the migrated template).
 */

const { cli, withDatabase } = cliHarness();

const behaviours = (shop: string): Promise<string[]> =>
  withDatabase(async (db) =>
    (
      await db.withSession((run) =>
        run<{ payment_behaviour: string }>('SELECT c.payment_behaviour FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id WHERE s.domain = $1 ORDER BY c.id', [shop]),
      )
    ).map((r) => r.payment_behaviour),
  );

describe('svc contracts seed --payment / set-payment', () => {
  it('seeds contracts whose simulated payment method answers as asked, and changes one of them', async () => {
    const shop = uniqueShop('payments');
    const seeded = await cli(['contracts', 'seed', shop, '--count', '2', '--payment', 'card_declined', '--json']);
    expect(seeded.code, seeded.stderr).toBe(0);
    const [first] = JSON.parse(seeded.stdout) as { id: string }[];
    expect(await behaviours(shop)).toEqual(['card_declined', 'card_declined']);
    const set = await cli(['contracts', 'set-payment', shop, first.id, 'requires_action']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('requires_action');
    expect(await behaviours(shop)).toEqual(['requires_action', 'card_declined']);
    expect((await cli(['contracts', 'seed', uniqueShop('plain'), '--count', '1'])).code).toBe(0);
  });

  it('refuses an unknown behaviour (usage), an unknown shop and another shop\'s contract (exit 1)', async () => {
    const shop = uniqueShop('refusals');
    const [c] = JSON.parse((await cli(['contracts', 'seed', shop, '--count', '1', '--json'])).stdout) as { id: string }[];
    const bad = await cli(['contracts', 'seed', shop, '--payment', 'maybe']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('succeeds, insufficient_funds, card_declined, expired_card, requires_action, out_of_stock');
    expect((await cli(['contracts', 'set-payment', shop, c.id, 'never'])).code).toBe(2);
    const unknown = await cli(['contracts', 'set-payment', uniqueShop('nobody'), c.id, 'succeeds']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown shop');
    const other = uniqueShop('other');
    await cli(['contracts', 'seed', other, '--count', '1']);
    const theirs = await cli(['contracts', 'set-payment', other, c.id, 'succeeds']);
    expect(theirs.code).toBe(1);
    expect(theirs.stderr).toContain('No subscription contract');
    expect(await behaviours(shop)).toEqual(['succeeds']);
  });
});
