/**
 * The Store contract's policy part: revisions, the active pointer, the session reads replay
 * needs, and their place in dumps. Registered by `runStoreContract` for every store kind.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy, createGatehouse, type Gatehouse, type Store } from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

const OTHER_POLICY = `${BUDGET_POLICY}
rules:
  - name: no_deletes
    when: "action.startsWith('files.delete')"
    verdict: Block
`;

/** Registers the policy revision cases; `get` hands out the suite's fresh store and core. */
export function policyRevisionContract(
  get: () => { store: Store; gh: Gatehouse },
  open: () => Promise<Store>,
) {
  describe('policy revisions', () => {
    it('stores a revision once, points the tenant at it and records the activation', async () => {
      const { store, gh } = get();
      const before = await gh.getActivePolicy();
      expect(before).toMatchObject({ revision: gh.policy.revision, activated_by: null, seq: null });
      const active = await gh.activatePolicy(
        { policy: OTHER_POLICY, expected_revision: before.revision },
        { actor: 'key_1' },
      );
      const revision = compilePolicy(OTHER_POLICY).revision;
      expect(active).toMatchObject({ revision, activated_by: 'key_1', seq: 1 });
      expect(await store.getActivePolicy('default')).toMatchObject({
        revision,
        activated_by: 'key_1',
        seq: 1,
      });
      expect(await store.getPolicyRevision('default', revision)).toMatchObject({
        revision,
        source: OTHER_POLICY,
        created_by: 'key_1',
      });
      // The same revision again changes nothing; another tenant sees none of it.
      await gh.activatePolicy({ policy: OTHER_POLICY, expected_revision: revision });
      const { events } = await gh.readHistory({ type: 'policy.activated' });
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toMatchObject({ revision, previous_revision: null, activated_by: 'key_1' });
      expect(await store.getActivePolicy('t2')).toBeNull();
      expect(await store.getPolicyRevision('t2', revision)).toBeNull();
      await expect(gh.getPolicyRevision(revision, { tenantId: 't2' })).rejects.toMatchObject({
        code: 'not_found',
      });
    });

    it('lists revisions newest first, in pages', async () => {
      const { store, gh } = get();
      let expected = gh.policy.revision;
      const made: string[] = [];
      for (let i = 0; i < 5; i += 1) {
        const text = `${OTHER_POLICY}  - name: r${i}\n    when: "action == 'x${i}'"\n    verdict: Warn\n`;
        expected = (await gh.activatePolicy({ policy: text, expected_revision: expected })).revision;
        made.push(expected);
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await gh.listPolicyRevisions({ limit: 2, ...(cursor ? { cursor } : {}) });
        seen.push(...page.revisions.map((r) => r.revision));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual([...made].reverse());
      expect((await gh.listPolicyRevisions()).revisions[0]).toMatchObject({ active: true });
      expect((await store.listPolicyRevisions('default', { limit: 10 })).map((r) => r.revision)).toEqual(
        [...made].reverse(),
      );
      await expect(gh.listPolicyRevisions({ cursor: 'nope' })).rejects.toMatchObject({
        code: 'invalid_request',
      });
    });

    it('reads every version and every conflict of a session', async () => {
      const { store, gh } = get();
      const w = (value: string, source: string) =>
        gh.recordState({ session_id: 's1', key: 'budget.limit', value, type: 'fact', source });
      await w('5000', 'user_input');
      await w('6000', 'user_input');
      await w('9', 'tool_output');
      await gh.recordState({ session_id: 's1', key: 'a.b', value: 'x', type: 'fact', source: 'user_input' });
      await gh.recordState({ session_id: 's2', key: 'a.b', value: 'y', type: 'fact', source: 'user_input' });
      const versions = await store.listSessionVersions('default', 's1');
      expect(versions.map((v) => [v.key, v.version, v.value])).toEqual([
        ['a.b', 1, 'x'],
        ['budget.limit', 1, '5000'],
        ['budget.limit', 2, '6000'],
      ]);
      const conflicts = await store.listSessionConflicts('default', 's1');
      expect(conflicts.map((c) => c.proposed.value)).toEqual(['9']);
      expect(await store.listSessionVersions('t2', 's1')).toEqual([]);
    });

    it('moves with a dump', async () => {
      const { store, gh } = get();
      await gh.activatePolicy({ policy: OTHER_POLICY, expected_revision: gh.policy.revision });
      const target = await open();
      try {
        await target.loadRows(store.dumpRows());
        const moved = createGatehouse({ store: target, policy: gh.policy });
        expect((await moved.getActivePolicy()).revision).toBe(compilePolicy(OTHER_POLICY).revision);
        expect((await moved.verifyHistory()).ok).toBe(true);
      } finally {
        await target.close();
      }
    });
  });
}
