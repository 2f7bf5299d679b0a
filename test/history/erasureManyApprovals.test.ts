/**
 * An erasure denies every pending approval of the session and expires every approved one, however
 * many: an approval left open after its session was erased could still be granted, and release
 * an action whose parameters are gone. It reads them 500 at a time.
 */
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse } from '../../src/index.js';

const POLICY = `
version: 1
actions:
  "refunds.*":
    rules:
      - name: refund_review
        when: "true"
        verdict: Block
        message: "Refund {params.n} needs a second look"
        approval: { expires_in: 1h, allow_self_approval: true }
`;

describe('erasure of a session with more approvals than one page', () => {
  it('denies all 1,203 pending and expires all 3 approved, and says so', async () => {
    const store = openSqliteStore();
    const gh = createGatehouse({ store, policy: compilePolicy(POLICY) });
    try {
      const held: string[] = [];
      // Each distinct params is its own approval (an approval is bound to the exact action).
      for (let n = 0; n < 1206; n += 1) {
        const decision = await gh.evaluate({ session_id: 's1', action: 'refunds.issue', params: { n } });
        held.push(decision.approval!.id);
      }
      for (const id of held.slice(0, 3)) await gh.approve(id);

      const dry = await gh.eraseSession({ session_id: 's1', dry_run: true });
      expect(dry.pending_approvals).toHaveLength(500);

      const report = await gh.eraseSession({ session_id: 's1' });
      expect(report.pending_approvals).toHaveLength(1203);
      expect(report.approved_approvals).toHaveLength(3);
      expect(new Set([...report.pending_approvals, ...report.approved_approvals])).toEqual(new Set(held));
      for (const status of ['pending', 'approved'] as const) {
        expect((await gh.listApprovals({ session_id: 's1', status })).approvals).toEqual([]);
      }
      expect(
        (await gh.listApprovals({ session_id: 's1', status: 'denied', limit: 1 })).approvals,
      ).toHaveLength(1);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true });
    } finally {
      await store.close();
    }
  }, 60_000);
});
