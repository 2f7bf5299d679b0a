/**
 * The hash chain: any honest chain verifies; any change to a stored event (its data, its order,
 * its presence) is found, at the first event it breaks.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeCursor,
  encodeCursor,
  GENESIS_HASH,
  type HistoryEvent,
  hashEvent,
  verifyChain,
} from '../../src/index.js';

function chain(datas: Array<Record<string, unknown>>, tenant = 't'): HistoryEvent[] {
  let prev = GENESIS_HASH;
  return datas.map((data, i) => {
    const base = {
      event_id: `evt_${i}`,
      seq: i + 1,
      type: 'state_change' as const,
      session_id: 's',
      occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      data,
      prev_hash: prev,
    };
    const hash = hashEvent({ tenant_id: tenant, ...base });
    prev = hash;
    return { ...base, hash };
  });
}

async function* pages(events: HistoryEvent[], size: number) {
  for (let i = 0; i < events.length; i += size) yield events.slice(i, i + size);
}

const data = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const datas = fc.array(data, { minLength: 1, maxLength: 25 });

describe('hash chain', () => {
  it('verifies every honest chain, whatever the page size', async () => {
    await fc.assert(
      fc.asyncProperty(datas, fc.integer({ min: 1, max: 30 }), async (ds, size) => {
        const events = chain(ds);
        const result = await verifyChain('t', pages(events, size));
        expect(result).toEqual({
          ok: true,
          checked: ds.length,
          head: events.at(-1)!.hash,
          first_bad_seq: null,
          problem: null,
          verified_fields: 0,
          erased_fields: 0,
          erased: [],
        });
      }),
    );
  });

  it('finds a change to any event’s data at that event', async () => {
    await fc.assert(
      fc.asyncProperty(datas, fc.nat(), async (ds, pick) => {
        const events = chain(ds);
        const i = pick % events.length;
        events[i] = { ...events[i]!, data: { ...events[i]!.data, tampered: true } };
        const result = await verifyChain('t', pages(events, 7));
        expect(result).toMatchObject({ ok: false, checked: i, first_bad_seq: i + 1 });
      }),
    );
  });

  it('finds a removed or swapped event', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(data, { minLength: 3, maxLength: 20 }), fc.nat(), async (ds, pick) => {
        const events = chain(ds);
        const i = pick % (events.length - 1);
        const removed = events.filter((_, j) => j !== i);
        expect((await verifyChain('t', pages(removed, 5))).ok).toBe(false);
        const swapped = [...events];
        [swapped[i], swapped[i + 1]] = [swapped[i + 1]!, swapped[i]!];
        expect((await verifyChain('t', pages(swapped, 5))).ok).toBe(false);
      }),
    );
  });

  it('binds the chain to its tenant and gives an empty chain no head', async () => {
    const events = chain([{ a: 1 }, { b: 2 }], 'tenant-a');
    expect((await verifyChain('tenant-b', pages(events, 10))).ok).toBe(false);
    expect(await verifyChain('t', pages([], 10))).toMatchObject({ ok: true, checked: 0, head: null });
  });

  it('hashes the canonical form: key order does not matter, values do', () => {
    const base = {
      tenant_id: 't',
      seq: 1,
      event_id: 'e',
      type: 'x',
      session_id: 's',
      occurred_at: 'now',
      prev_hash: GENESIS_HASH,
    };
    expect(hashEvent({ ...base, data: { a: 1, b: 2 } })).toBe(hashEvent({ ...base, data: { b: 2, a: 1 } }));
    expect(hashEvent({ ...base, data: { a: 1 } })).not.toBe(hashEvent({ ...base, data: { a: '1' } }));
  });
});

describe('cursors', () => {
  it('round-trip any position and refuse another order', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.constantFrom('asc' as const, 'desc' as const),
        (seq, order) => {
          expect(decodeCursor(encodeCursor({ seq, order }), order)).toEqual({ seq, order });
          expect(() => decodeCursor(encodeCursor({ seq, order }), order === 'asc' ? 'desc' : 'asc')).toThrow(
            /order/,
          );
        },
      ),
    );
  });
});
