/**
 * `wait_for_approval` over MCP's Streamable HTTP face (`/mcp`): an MCP client that goes away in
 * the middle of the wait (its connection closed, as a crashed or timed-out agent's is) ends the
 * wait, as an abandoned `GET /v1/approvals/{id}?wait=` does. docs/approvals.md: "the MCP tool
 * wait_for_approval ends the same way when its client cancels the call or goes away".
 */
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CallContext,
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { APPROVAL_POLICY } from '../support/policies.js';
import { type ApprovalReads, countApprovalReads } from './approvalReads.js';

let store: Store;
let gh: Gatehouse;
let app: HttpApp;
let server: RunningServer | undefined;
let admin: string;
/** The store's reads of approvals. */
let reads: ApprovalReads;

beforeEach(async () => {
  store = openSqliteStore();
  reads = countApprovalReads(store);
  gh = createGatehouse({ store, policy: compilePolicy(APPROVAL_POLICY) });
  await gh.recordState({
    session_id: 's1',
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
  });
  admin = (
    await createApiKey(store, { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() })
  ).secret;
  app = createHttpApp({ gatehouse: gh, rateLimit: false, mcp: createMcpHttpHandler({ gatehouse: gh }) });
});
afterEach(async () => {
  app.close();
  await server?.close(100);
  server = undefined;
  await store.close();
});

const finance: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function abandonMcpWait(): Promise<void> {
  const held = await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'wait_for_approval',
      arguments: {
        approval_id: held.approval!.id,
        session_id: 's1',
        action: 'payments.transfer',
        params: { amount: 9000 },
        timeout_seconds: 60,
      },
    },
  });
  const socket = connect(server!.port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server!.port}\r\nAuthorization: Bearer ${admin}\r\n` +
      'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
      `MCP-Protocol-Version: 2025-06-18\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await reads.reach(reads.count() + 3);
  socket.destroy();
  // Three reads took ~300 ms; an abandoned wait would read again at ~700 ms and ~1.5 s.
  await sleep(100);
  const after = reads.count();
  await sleep(1500);
  expect(reads.count()).toBe(after);
  // Nor does a person's approval, given after the agent went away, get used up for nobody.
  await gh.approve(held.approval!.id, {}, finance);
  await sleep(200);
  expect(await gh.getApproval(held.approval!.id)).toMatchObject({ status: 'approved', uses_left: 1 });
}

describe('wait_for_approval over /mcp', () => {
  it('ends when the client goes away (node:http face)', async () => {
    server = await startHttpServer(app, { port: 0 });
    await abandonMcpWait();
  }, 10_000);

  it('ends when the client goes away (web face behind @hono/node-server)', async () => {
    server = await startHttpServer((request) => app.fetch(request), { port: 0 });
    await abandonMcpWait();
  }, 10_000);
});
