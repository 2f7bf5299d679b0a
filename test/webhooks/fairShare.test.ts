/**
 * fairShare: how a sender's free slots go to tenants and their webhooks. The stores' claims and
 * the dispatcher's end-to-end behaviour are tested beside them (test/store/contract.ts,
 * test/adapters/webhooks/dispatcher.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ClaimShare, type DueCandidate, fairShare, webhookShareKey } from '../../src/index.js';

const due = (tenant: string, webhook: string, second: number): DueCandidate => ({
  tenant_id: tenant,
  webhook_id: webhook,
  next_attempt_at: `2026-01-01T00:00:${String(second).padStart(2, '0')}.000Z`,
});

const share = (
  perTenant: number,
  tenants: Record<string, number> = {},
  webhooks: Record<string, number> = {},
) =>
  ({
    perTenant,
    heldByTenant: new Map(Object.entries(tenants)),
    heldByWebhook: new Map(Object.entries(webhooks)),
  }) satisfies ClaimShare;

const ids = (chosen: readonly DueCandidate[]) =>
  chosen.map((c) => `${c.tenant_id}/${c.webhook_id}@${c.next_attempt_at.slice(17, 19)}`);

describe('fairShare', () => {
  it('alternates tenants, earliest due first among equals, and hands the choice back due-first', () => {
    const backlog = [0, 1, 2, 3, 4].map((s) => due('hog', 'w', s));
    const chosen = fairShare([...backlog, due('b', 'w', 50), due('b', 'w', 51)], 4);
    expect(ids(chosen)).toEqual(['hog/w@00', 'hog/w@01', 'b/w@50', 'b/w@51']);
  });

  it('counts what the sender holds already: the tenant holding the fewest goes first', () => {
    const chosen = fairShare([due('a', 'w', 0), due('a', 'w', 1), due('b', 'w', 9)], 2, share(8, { a: 3 }));
    expect(ids(chosen)).toEqual(['a/w@00', 'b/w@09']);
    const busier = fairShare([due('a', 'w', 0), due('b', 'w', 9), due('b', 'w', 10)], 2, share(8, { a: 3 }));
    expect(ids(busier)).toEqual(['b/w@09', 'b/w@10']);
  });

  it('gives a tenant at its cap nothing, and one below it no more than the room left', () => {
    const hog = [0, 1, 2, 3].map((s) => due('hog', 'w', s));
    expect(fairShare(hog, 4, share(3, { hog: 3 }))).toEqual([]);
    expect(ids(fairShare(hog, 4, share(3, { hog: 1 })))).toEqual(['hog/w@00', 'hog/w@01']);
  });

  it("shares a tenant's slots between its webhooks: a silent one does not take the tenant's share", () => {
    const silent = [0, 1, 2, 3].map((s) => due('t', 'silent', s));
    const held = share(4, { t: 2 }, { [webhookShareKey('t', 'silent')]: 2 });
    expect(ids(fairShare([...silent, due('t', 'ok', 30)], 2, held))).toEqual(['t/silent@00', 't/ok@30']);
  });

  it('balances loads: a tenant left waiting below its cap holds at most one fewer than any tenant served', () => {
    const tenants = ['a', 'b', 'c', 'd'];
    const candidate = fc
      .record({
        tenant: fc.constantFrom(...tenants),
        webhook: fc.constantFrom('x', 'y'),
        second: fc.integer({ min: 0, max: 59 }),
      })
      .map((c) => due(c.tenant, c.webhook, c.second));
    fc.assert(
      fc.property(
        fc.array(candidate, { maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 8 }),
        fc.dictionary(fc.constantFrom(...tenants), fc.integer({ min: 0, max: 8 })),
        (candidates, limit, perTenant, held) => {
          const chosen = fairShare(candidates, limit, share(perTenant, held));
          expect(chosen.length).toBeLessThanOrEqual(limit);
          // Each candidate at most once, in due order.
          expect(new Set(chosen).size).toBe(chosen.length);
          for (const c of chosen) expect(candidates).toContain(c);
          expect(chosen.map((c) => c.next_attempt_at)).toEqual(chosen.map((c) => c.next_attempt_at).sort());
          const load = (t: string) => (held[t] ?? 0) + chosen.filter((c) => c.tenant_id === t).length;
          const served = new Set(chosen.map((c) => c.tenant_id));
          for (const t of served) expect(load(t)).toBeLessThanOrEqual(Math.max(perTenant, held[t] ?? 0));
          for (const t of served) expect(held[t] ?? 0).toBeLessThan(perTenant);
          const waiting = tenants.filter(
            (t) =>
              load(t) < perTenant &&
              candidates.filter((c) => c.tenant_id === t).length > load(t) - (held[t] ?? 0),
          );
          if (waiting.length > 0) expect(chosen).toHaveLength(limit);
          for (const w of waiting) for (const t of served) expect(load(t)).toBeLessThanOrEqual(load(w) + 1);
        },
      ),
    );
  });
});
