/**
 * An erased item is no state: the gate treats it as missing, a write to it starts afresh at the
 * writer's own trust (no conflict against the erased value), and resolving a conflict never turns
 * it back into a current item (it would read as a present value at the erased write's trust).
 * On real stores, after a session erasure and after retention.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { compilePolicy, createGatehouse } from '../../src/index.js';
import { STORE_TARGETS } from './storeTargets.js';

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const POLICY = `version: 1
retention:
  values_after: 30d
actions:
  "data.export":
    requires:
      - key: consent.export
        min_trust: user_input
`;
const consent = (source: string, value = 'granted') => ({
  session_id: 's1',
  key: 'consent.export',
  value,
  type: 'fact' as const,
  source,
});
const exportData = { session_id: 's1', action: 'data.export', params: {} };

describe.each(STORE_TARGETS)('an erased item on $name', (target) => {
  it('takes a later write afresh at its own trust, and the gate still blocks a low-trust one', async () => {
    const store = await target.open(target.place());
    const gh = createGatehouse({ store, policy: compilePolicy(POLICY) });
    try {
      await gh.recordState(consent('user_input'));
      await gh.eraseSession({ session_id: 's1', reference: 'DSR-1' });
      expect((await gh.evaluate(exportData)).verdict).toBe('Block');

      const guess = await gh.recordState(consent('agent_inference'));
      expect(guess).toMatchObject({ outcome: 'created', conflict: null });
      expect(guess.item).toMatchObject({ status: 'current', source: 'agent_inference', version: 2 });
      expect(await gh.listConflicts({ session_id: 's1' })).toEqual([]);
      const decision = await gh.evaluate(exportData);
      expect(decision.verdict).toBe('Block');
      expect(decision.reason).toMatch(/consent\.export/);

      await gh.recordState(consent('user_input', 'granted again'));
      expect((await gh.evaluate(exportData)).verdict).toBe('Allow');
      expect((await gh.verifyHistory()).ok).toBe(true);
    } finally {
      await store.close();
    }
  });

  /** An item last written before retention's cut-off, a conflict on it opened after; retention run. */
  async function openConflictOnClearedItem() {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({ store, clock: () => new Date(clock.now), policy: compilePolicy(POLICY) });
    await gh.recordState(consent('user_input'));
    clock.now = T0 + 100 * DAY;
    const proposal = await gh.recordState(consent('agent_inference', 'revoked'));
    expect(proposal.outcome).toBe('conflict');
    clock.now = T0 + 110 * DAY;
    await gh.runRetention();
    expect(await gh.getItem('s1', 'consent.export')).toMatchObject({ status: 'erased', value: '' });
    return { store, gh, proposal };
  }

  it('stays erased when a conflict left open by retention is resolved keep_current', async () => {
    const { store, gh, proposal } = await openConflictOnClearedItem();
    try {
      await gh.resolveConflict(proposal.conflict!.conflict_id, { resolution: 'keep_current' });
      expect(await gh.getItem('s1', 'consent.export')).toMatchObject({ status: 'erased', value: '' });
      expect((await gh.evaluate(exportData)).verdict).toBe('Block');
      expect((await gh.verifyHistory()).ok).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('settles a conflict left open by retention when the key is written again', async () => {
    const { store, gh, proposal } = await openConflictOnClearedItem();
    try {
      const fresh = await gh.recordState(consent('tool_output', 'unknown'));
      expect(fresh).toMatchObject({ outcome: 'created', item: { status: 'current', value: 'unknown' } });
      expect(await gh.listConflicts({ session_id: 's1', status: 'open' })).toEqual([]);
      const settled = await gh.listConflicts({ session_id: 's1' });
      expect(settled.find((c) => c.conflict_id === proposal.conflict!.conflict_id)?.status).toBe('resolved');
      expect((await gh.verifyHistory()).ok).toBe(true);
    } finally {
      await store.close();
    }
  });
});
