/**
 * An evaluation reads the session before its transaction; an erasure that commits in between
 * (on the same SQLite store, or on another connection to the file, as `gatehouse erase` beside a
 * running server) must leave no decision after it that quotes the erased values or stands on
 * them: the evaluation runs again on what the erasure left (src/operations/staleReads.ts).
 * test/postgres/multiInstanceRaces.test.ts does the same across PostgreSQL instances.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse } from '../../src/index.js';
import { pausedOnce } from '../support/pausedStore.js';
import { APPROVAL_POLICY, BUDGET_POLICY } from '../support/policies.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-erasure-race-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The erased budget as a value of its own: a hash or an ID in an event may hold the digits 4321. */
const ERASED = /\b4321\b/;

const item = (value: string) => ({
  session_id: 's1',
  key: 'budget.limit',
  value,
  type: 'fact',
  source: 'user_input',
});

async function evaluationAcrossErasure(yaml: string, options: { sameStore: boolean; rewrite?: string }) {
  const filename = join(
    dir,
    `${options.sameStore ? 'same' : 'two'}-${Math.random().toString(36).slice(2)}.db`,
  );
  const a = openSqliteStore({ filename });
  const b = options.sameStore ? a : openSqliteStore({ filename });
  const policy = compilePolicy(yaml);
  const { paused, read, resume } = pausedOnce(a, 'listItems');
  const ghA = createGatehouse({ store: paused, policy });
  const ghB = createGatehouse({ store: b, policy });
  try {
    await ghB.recordState(item('4321'));
    // The session is read (and cached) by A's store before the evaluation's read is paused.
    expect(await a.listItems('default', 's1')).toHaveLength(1);
    const pending = ghA.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 5000 } });
    await read;
    const erasure = await ghB.eraseSession({ session_id: 's1' });
    if (options.rewrite !== undefined) await ghB.recordState(item(options.rewrite));
    resume();
    const decision = await pending;
    const events = await b.queryEvents('default', { order: 'asc', limit: 100 });
    const after = events.filter((e) => e.seq > erasure.erasure!.seq);
    return { decision, after, verified: await ghB.verifyHistory() };
  } finally {
    await a.close();
    if (b !== a) await b.close();
  }
}

describe.each([
  ['the same store', true],
  ['another connection to the file', false],
])('an evaluation racing an erasure by %s (SQLite)', (_name, sameStore) => {
  it('neither quotes nor decides on the erased value', async () => {
    const { decision, after, verified } = await evaluationAcrossErasure(BUDGET_POLICY, { sameStore });
    expect(after.map((e) => e.type)).toEqual(['gate_evaluation']);
    expect(JSON.stringify(decision)).not.toMatch(ERASED);
    expect(JSON.stringify(after)).not.toMatch(ERASED);
    expect(decision.verdict).toBe('Block');
    expect(decision.reasons.map((r) => r.rule)).toContain('required_missing');
    expect(verified.ok).toBe(true);
  });

  it('decides on the value written after the erasure', async () => {
    const { decision, after, verified } = await evaluationAcrossErasure(BUDGET_POLICY, {
      sameStore,
      rewrite: '9999',
    });
    expect(after.map((e) => e.type)).toEqual(['state_change', 'gate_evaluation']);
    expect(JSON.stringify(after)).not.toMatch(ERASED);
    expect(decision).toMatchObject({ verdict: 'Allow', state_versions: { 'budget.limit': 2 } });
    expect(verified.ok).toBe(true);
  });

  it('a held evaluation asks for no approval of the erased state', async () => {
    const { decision, after, verified } = await evaluationAcrossErasure(APPROVAL_POLICY, { sameStore });
    expect(after.map((e) => e.type)).toEqual(['gate_evaluation']);
    expect(JSON.stringify(after)).not.toMatch(ERASED);
    expect(decision.approval).toBeUndefined();
    expect(verified.ok).toBe(true);
  });
});
