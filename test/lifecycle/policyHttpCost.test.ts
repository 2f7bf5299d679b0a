/**
 * The cost of one policy, over HTTP: a `PUT /v1/policy` whose YAML aliases repeat a long message
 * is refused (it took seconds of the event loop to compile), and a policy printing `{params}` in
 * thousands of placeholders records a bounded decision (it recorded 85 MB per decision).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

let store: Store;
let app: ReturnType<typeof createHttpApp>;
let admin: string;

beforeEach(async () => {
  store = openSqliteStore();
  const gatehouse = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
  app = createHttpApp({ gatehouse, keys: store, rateLimit: false });
  const made = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['admin'] },
  );
  admin = made.secret;
});
afterEach(async () => {
  await store.close();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

async function put(policy: string) {
  const active = await call('GET', '/v1/policy');
  return call('PUT', '/v1/policy', { policy }, { 'if-match': active.headers.get('etag')! });
}

const head = 'version: 1\ndefault_verdict: Allow\n';

describe('the cost of a policy over HTTP', () => {
  it('refuses a policy whose aliases repeat a long message in 100 rules: 422', async () => {
    const rules = Array.from(
      { length: 99 },
      (_, i) => `  - {name: r${i + 1}, when: "true", verdict: Block, message: *m}`,
    ).join('\n');
    const policy = `${head}rules:\n  - {name: r0, when: "true", verdict: Block, message: &m "${'{1}'.repeat(13_000)}"}\n${rules}\n`;
    const res = await put(policy);
    expect(res.status).toBe(422);
    expect(res.json.errors).toEqual([
      { path: '', message: expect.stringMatching(/aliases expand the policy to more than twice/) },
    ]);
  });

  it('records a bounded decision for a policy printing {params} thousands of times', async () => {
    const policy = `${head}rules:\n  - {name: r, when: "true", verdict: Block, message: "${'{params}'.repeat(5500)}"}\n`;
    expect((await put(policy)).status).toBe(200);
    const params = { items: Array.from({ length: 1500 }, (_, i) => ({ a: i })) };
    const res = await call('POST', '/v1/gates/evaluate', { session_id: 's1', action: 'x.y', params });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ verdict: 'Block', reasons: [{ rule: 'r' }] });
    expect(res.text.length).toBeLessThan(128 * 1024);
    const [event] = await store.queryEvents('default', { type: 'gate_evaluation', order: 'desc', limit: 1 });
    expect(JSON.stringify(event).length).toBeLessThan(128 * 1024);
  });
});
