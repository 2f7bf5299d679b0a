/**
 * A secret the caller passes in params or context (by its name: `password`; by its shape: a live
 * API key) is masked in the recorded params, and everywhere else it is quoted: a rule's message,
 * a failing rule's error, a held decision's approval and its events, the evaluate answer.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Gatehouse, type Store } from '../../src/index.js';

const PASSWORD = 'correct-horse-battery-staple';
const POLICY = `
version: 1
actions:
  "db.connect":
    rules:
      - name: prod_login
        when: "params.host == 'prod'"
        verdict: Block
        message: "Login to {params.host} as {params.user} with {params.password} is not allowed"
  "db.check":
    rules:
      - name: password_flag
        when: "bool(params.password)"
        verdict: Warn
  "db.rotate":
    rules:
      - name: rotation
        when: "true"
        verdict: Block
        message: "Rotating to {context.new_password} needs a second person"
        approval: { expires_in: 1h }
`;

let store: Store;
let gh: Gatehouse;
beforeEach(() => {
  store = openSqliteStore();
  gh = createGatehouse({ store, policy: compilePolicy(POLICY) });
});
afterEach(async () => {
  await store.close();
});

it('is masked where a rule message quotes it, and so is a longer string holding it', async () => {
  const decision = await gh.evaluate({
    session_id: 's1',
    action: 'db.connect',
    params: { host: 'prod', user: 'admin', password: PASSWORD, note: `set to ${PASSWORD} yesterday` },
  });
  expect(decision.verdict).toBe('Block');
  expect(decision.reason).toBe('Login to prod as admin with [secret masked] is not allowed');
  const history = JSON.stringify(await gh.readHistory({ session_id: 's1' }));
  expect(history).toContain('Login to prod as admin with');
  for (const out of [
    JSON.stringify(decision),
    history,
    JSON.stringify(await gh.getDecision(decision.decision_id)),
  ]) {
    expect(out).not.toContain(PASSWORD);
  }
});

it('is masked where a rule message quotes it however short (a CVV)', async () => {
  const decision = await gh.evaluate({
    session_id: 's1',
    action: 'db.connect',
    params: { host: 'prod', user: 'admin', password: 'Zq9' },
  });
  expect(decision.reason).toBe('Login to prod as admin with [secret masked] is not allowed');
  expect(JSON.stringify(await gh.readHistory({ session_id: 's1' }))).not.toContain('Zq9');
});

it("is masked where a failing rule's error echoes it", async () => {
  const decision = await gh.evaluate({
    session_id: 's1',
    action: 'db.check',
    params: { password: PASSWORD },
  });
  expect(decision.reasons[0]).toMatchObject({ rule: 'policy_error' });
  expect(JSON.stringify(decision)).not.toContain(PASSWORD);
  expect(JSON.stringify(await gh.readHistory({ session_id: 's1' }))).not.toContain(PASSWORD);
});

it('is masked in a held decision, its approval and their events (from context)', async () => {
  const held = await gh.evaluate({
    session_id: 's1',
    action: 'db.rotate',
    params: {},
    context: { new_password: PASSWORD },
  });
  expect(held.approval?.status).toBe('pending');
  const approval = await gh.getApproval(held.approval!.id);
  expect(approval.reason).toBe('Rotating to [secret masked] needs a second person');
  for (const out of [held, approval, await gh.readHistory({ session_id: 's1' })]) {
    expect(JSON.stringify(out)).not.toContain(PASSWORD);
  }
});
