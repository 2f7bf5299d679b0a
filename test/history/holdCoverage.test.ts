/**
 * A prune names the session holds that cover its range, and only those: a hold on a session whose
 * events all lie after the range is neither the reason for a refusal nor recorded as overridden
 * (`legal_hold.overridden` is the chain's word on which matters were set aside).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createGatehouse, generateCheckpointKeyPair, loadCheckpointSigner } from '../../src/index.js';
import { STORE_TARGETS } from './storeTargets.js';

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const key = generateCheckpointKeyPair();

describe.each(STORE_TARGETS)('holds a prune covers on $name', (target) => {
  it('names only the holds whose sessions have events in the range', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      checkpointSigner: loadCheckpointSigner(key.privateKey),
    });
    const write = (session_id: string, value: string) =>
      gh.recordState({ session_id, key: 'agent.note', value, type: 'fact', source: 'user_input' });
    try {
      // Seqs 1-5: session early; 6-10: session late.
      for (let i = 0; i < 10; i += 1) await write(i < 5 ? 'early' : 'late', `v${i}`);
      const early = await gh.placeHold({ session_id: 'early', reference: 'CASE-EARLY' });
      const late = await gh.placeHold({ session_id: 'late', reference: 'CASE-LATE' });
      clock.now = T0 + 250 * DAY;

      // Through seq 5: only the early session's events are in the range.
      const refusal = gh.pruneHistory({ through_seq: 5 });
      await expect(refusal).rejects.toMatchObject({ message: expect.stringContaining('CASE-EARLY') });
      await expect(gh.pruneHistory({ through_seq: 5 })).rejects.not.toMatchObject({
        message: expect.stringContaining('CASE-LATE'),
      });

      await gh.pruneHistory({ through_seq: 5, override_hold: true, reference: 'OPS-1' });
      const [overridden] = (await gh.readHistory({ type: 'legal_hold.overridden' })).events;
      expect(overridden!.data).toMatchObject({
        holds: [early.hold_id],
        references: ['CASE-EARLY'],
        operation: 'prune through seq 5',
      });
      // The late session's hold still stands, untouched.
      expect((await gh.listHolds()).holds.map((h) => h.hold_id)).toContain(late.hold_id);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, pruned_through: 5 });
    } finally {
      await store.close();
    }
  });
});
