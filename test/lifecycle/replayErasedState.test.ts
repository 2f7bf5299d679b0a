/**
 * Replay after retention erased state that kept decisions read: an erased item is no state (as
 * the live gate has it), and a decision whose verdict rested on an erased value — read as
 * recorded, or read by the candidate — is counted `unreplayable`, never reported as a verdict
 * change. A value written empty is a value, not an erasure. On real stores.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  compilePolicy,
  createGatehouse,
  type ReplayedDecision,
  replayDecisions,
  type Store,
} from '../../src/index.js';
import { STORE_TARGETS } from '../history/storeTargets.js';

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
    rules:
      - name: not_granted
        when: "state['consent.export'].value != 'granted'"
        verdict: Block
        message: "consent is {state['consent.export'].value}"
  "payments.transfer":
    rules:
      - name: over_limit
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
      - name: noted
        when: "state['ticket.note'].value != ''"
        verdict: Warn
`;
/** The same, but a transfer now reads the consent too: a value the recorded decision never read. */
const CANDIDATE = POLICY.replace(
  '      - name: noted',
  `      - name: no_consent
        when: "state['consent.export'].value != 'granted'"
        verdict: Block
      - name: noted`,
);

describe.each(STORE_TARGETS)('replay after retention erased state on $name', (target) => {
  it('counts decisions that read an erased value unreplayable and replays the rest', async () => {
    const store: Store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({ store, clock: () => new Date(clock.now), policy: compilePolicy(POLICY) });
    const write = (key: string, value: string) =>
      gh.recordState({ session_id: 's1', key, value, type: 'fact', source: 'user_input' });
    try {
      await write('consent.export', 'granted');
      clock.now = T0 + 20 * DAY;
      const exported = await gh.evaluate({ session_id: 's1', action: 'data.export', params: {} });
      expect(exported.verdict).toBe('Allow');
      clock.now = T0 + 40 * DAY;
      await write('budget.limit', '100');
      await write('ticket.note', '');
      clock.now = T0 + 41 * DAY;
      const transfer = await gh.evaluate({
        session_id: 's1',
        action: 'payments.transfer',
        params: { amount: 50 },
      });
      expect(transfer.verdict).toBe('Allow');
      clock.now = T0 + 45 * DAY;
      await gh.runRetention();
      expect(await gh.getItem('s1', 'consent.export')).toMatchObject({ status: 'erased' });
      expect(await gh.getItem('s1', 'ticket.note')).toMatchObject({ status: 'current', value: '' });
      clock.now = T0 + 46 * DAY;
      const later = await gh.evaluate({ session_id: 's1', action: 'data.export', params: {} });
      expect(later.reasons.map((r) => r.rule)).toContain('required_missing');

      const replay = async (policy: string) => {
        const replayed: ReplayedDecision[] = [];
        const report = await replayDecisions({
          store,
          tenantId: 'default',
          candidate: compilePolicy(policy),
          onDecision: (d) => replayed.push(d),
        });
        return { report, ids: replayed.map((d) => [d.recorded.decision_id, d.comparison]) };
      };

      // The same policy: the export that read the erased consent cannot be replayed; the transfer
      // (an empty note is a value) and the export after the erasure (consent missing) are unchanged.
      const same = await replay(POLICY);
      expect(same.report).toMatchObject({
        decisions: 2,
        unchanged: 2,
        changed: 0,
        pinned: 0,
        unreplayable: 1,
        unreplayable_reasons: { inputs_erased: 0, state_erased: 1 },
      });
      expect(same.ids).toEqual([
        [transfer.decision_id, 'unchanged'],
        [later.decision_id, 'unchanged'],
      ]);

      // A candidate whose transfer reads the erased consent: that transfer cannot be replayed either.
      const candidate = await replay(CANDIDATE);
      expect(candidate.report).toMatchObject({
        decisions: 1,
        changed: 0,
        unreplayable: 2,
        unreplayable_reasons: { inputs_erased: 0, state_erased: 2 },
      });
      expect(candidate.ids).toEqual([[later.decision_id, 'unchanged']]);
    } finally {
      await store.close();
    }
  });

  it('a conflict an erasure resolved is not open for the decisions after it', async () => {
    const store: Store = await target.open(target.place());
    const clock = { now: T0 };
    const policy = 'version: 1\nopen_conflicts: Warn\n';
    const gh = createGatehouse({ store, clock: () => new Date(clock.now), policy: compilePolicy(policy) });
    try {
      await gh.recordState({
        session_id: 's1',
        key: 'budget.limit',
        value: '100',
        type: 'fact',
        source: 'user_input',
      });
      const guess = await gh.recordState({
        session_id: 's1',
        key: 'budget.limit',
        value: '900',
        type: 'fact',
        source: 'tool_output',
      });
      expect(guess.outcome).toBe('conflict');
      clock.now = T0 + DAY;
      expect((await gh.evaluate({ session_id: 's1', action: 'files.read', params: {} })).verdict).toBe(
        'Warn',
      );
      clock.now = T0 + 2 * DAY;
      await gh.eraseSession({ session_id: 's1', reference: 'DSR-1' });
      clock.now = T0 + 3 * DAY;
      const after = await gh.evaluate({ session_id: 's1', action: 'files.read', params: {} });
      expect(after.verdict).toBe('Allow');

      const replayed: ReplayedDecision[] = [];
      const report = await replayDecisions({
        store,
        tenantId: 'default',
        candidate: compilePolicy(policy),
        onDecision: (d) => replayed.push(d),
      });
      // The decision before the erasure had its params erased with the session: not replayed.
      expect(report).toMatchObject({
        decisions: 1,
        unchanged: 1,
        changed: 0,
        unreplayable: 1,
        unreplayable_reasons: { inputs_erased: 1, state_erased: 0 },
      });
      expect(replayed.map((d) => [d.recorded.decision_id, d.comparison])).toEqual([
        [after.decision_id, 'unchanged'],
      ]);
    } finally {
      await store.close();
    }
  });
});
