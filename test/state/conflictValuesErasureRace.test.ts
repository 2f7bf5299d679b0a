/**
 * An evaluation reads the session's open conflicts before its transaction, and a rule may quote
 * them (`conflicts[0].proposed_value`) without reading the conflicted item itself. An erasure
 * that commits between that read and the append erases the conflicts' values: the decision
 * recorded after it must not quote them (src/operations/staleReads.ts checks what it read again).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse } from '../../src/index.js';
import { pausedOnce } from '../support/pausedStore.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-conflict-erasure-race-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const POLICY = `
version: 1
actions:
  "mail.*":
    rules:
      - name: disputed
        when: "size(conflicts) > 0"
        verdict: Warn
        message: "Disputed address: {conflicts[0].proposed_value}"
  "refunds.*":
    rules:
      - name: disputed_refund
        when: "size(conflicts) > 0"
        verdict: Block
        message: "Disputed address: {conflicts[0].proposed_value}"
        approval: { expires_in: 1h }
`;

async function evaluationAcrossErasure(action: string, sameStore: boolean) {
  const filename = join(dir, `${sameStore ? 'same' : 'two'}-${Math.random().toString(36).slice(2)}.db`);
  const a = openSqliteStore({ filename });
  const b = sameStore ? a : openSqliteStore({ filename });
  const policy = compilePolicy(POLICY);
  const { paused, read, resume } = pausedOnce(a, 'listConflicts');
  const ghA = createGatehouse({ store: paused, policy });
  const ghB = createGatehouse({ store: b, policy });
  try {
    const email = { session_id: 's1', key: 'contact.email', type: 'fact' };
    await ghB.recordState({ ...email, value: 'alice@example.org', source: 'user_input' });
    const proposed = await ghB.recordState({
      ...email,
      value: 'mallory-4321@example.org',
      source: 'retrieval',
    });
    expect(proposed.outcome).toBe('conflict');
    const pending = ghA.evaluate({ session_id: 's1', action, params: {} });
    await read;
    const erasure = await ghB.eraseSession({ session_id: 's1' });
    resume();
    const decision = await pending;
    const events = await b.queryEvents('default', { order: 'asc', limit: 100 });
    const after = events.filter((e) => e.seq > erasure.erasure!.seq);
    return { decision, after };
  } finally {
    await a.close();
    if (b !== a) await b.close();
  }
}

describe.each([
  ['the same store', true],
  ['another connection to the file', false],
])('an evaluation quoting a conflict, racing an erasure by %s (SQLite)', (_name, sameStore) => {
  it('does not quote the erased proposed value', async () => {
    const { decision, after } = await evaluationAcrossErasure('mail.send', sameStore);
    expect(after.map((e) => e.type)).toEqual(['gate_evaluation']);
    expect(JSON.stringify(after)).not.toContain('mallory-4321');
    expect(JSON.stringify(decision)).not.toContain('mallory-4321');
    expect(decision.verdict).toBe('Allow');
  });

  it('a held evaluation asks for no approval quoting it', async () => {
    const { decision, after } = await evaluationAcrossErasure('refunds.issue', sameStore);
    expect(JSON.stringify(after)).not.toContain('mallory-4321');
    expect(JSON.stringify(decision)).not.toContain('mallory-4321');
    expect(decision.approval).toBeUndefined();
  });
});
