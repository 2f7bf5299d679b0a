/**
 * Replay after the history prefix that set a session's state was pruned: each kept decision is
 * still replayed on the state at its position — the version of each item current then (written
 * before the prune point, or rewritten after it), an item first written later still absent, and
 * a conflict opened before the prune point still open — in a replay of the tenant and of one
 * session. On real stores.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  compilePolicy,
  createGatehouse,
  generateCheckpointKeyPair,
  loadCheckpointSigner,
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
const signer = loadCheckpointSigner(generateCheckpointKeyPair().privateKey);
/** Transfers over the budget are blocked; an open conflict on any key warns (the default). */
const POLICY = `version: 1
actions:
  "payments.transfer":
    rules:
      - name: over_limit
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
`;
/** Also reads two keys the recorded decisions never read. */
const CANDIDATE = `${POLICY}      - name: eu_review
        when: "state['account.region'].value == 'eu'"
        verdict: Block
      - name: promo
        when: "'promo.code' in state"
        verdict: Warn
`;

describe.each(STORE_TARGETS)('replay after a pruned prefix on $name', (target) => {
  it('replays each kept decision on the state at its position', async () => {
    const store: Store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: compilePolicy(POLICY),
      checkpointSigner: signer,
    });
    const write = (key: string, value: string, source = 'user_input') =>
      gh.recordState({ session_id: 's1', key, value, type: 'fact', source });
    const transfer = () =>
      gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 150 } });
    try {
      await write('budget.limit', '100');
      await write('account.region', 'eu');
      await write('ticket.tier', 'gold');
      expect((await write('ticket.tier', 'silver', 'agent_inference')).outcome).toBe('conflict');
      const [last] = (await gh.readHistory({ order: 'desc', limit: 1 })).events;

      clock.now = T0 + 200 * DAY;
      const before = await transfer();
      expect(before.reasons.map((r) => r.rule)).toEqual(['over_limit', 'open_conflicts']);
      clock.now = T0 + 201 * DAY;
      await write('budget.limit', '200');
      await write('account.region', 'us');
      await write('promo.code', 'SPRING');
      clock.now = T0 + 202 * DAY;
      const after = await transfer();
      expect(after.reasons.map((r) => r.rule)).toEqual(['open_conflicts']);

      clock.now = T0 + 400 * DAY;
      expect((await gh.pruneHistory({ through_seq: last!.seq })).events).toBe(last!.seq);

      const replay = async (policy: string, sessionId?: string) => {
        const replayed: ReplayedDecision[] = [];
        const report = await replayDecisions({
          store,
          tenantId: 'default',
          candidate: compilePolicy(policy),
          sessionId,
          onDecision: (d) => replayed.push(d),
        });
        return {
          report,
          decisions: replayed.map((d) => [
            d.recorded.decision_id,
            d.replayed.verdict,
            d.replayed.reasons.map((r) => r.rule),
          ]),
        };
      };
      for (const sessionId of [undefined, 's1']) {
        const same = await replay(POLICY, sessionId);
        expect(same.report).toMatchObject({ decisions: 2, unchanged: 2, pinned: 0, unreplayable: 0 });

        const candidate = await replay(CANDIDATE, sessionId);
        expect(candidate.decisions).toEqual([
          [before.decision_id, 'Block', ['over_limit', 'eu_review', 'open_conflicts']],
          [after.decision_id, 'Warn', ['promo', 'open_conflicts']],
        ]);
        expect(candidate.report).toMatchObject({ unreplayable: 0 });
      }
    } finally {
      await store.close();
    }
  });
});
