/**
 * An abandoned long-poll stops: `getApproval` with `wait` ends when its caller's signal aborts,
 * and over HTTP the signal aborts when the client goes away — on the node:http face and through
 * @hono/node-server's converter (the web face), on a real loopback socket.
 */
import { connect } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { createMcpServer } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createApprovalWaiters } from '../../src/approvals/approvalWaiters.js';
import {
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
});
afterEach(async () => {
  await store.close();
});

/** A pending approval's ID. */
async function pending(): Promise<string> {
  const held = await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
  return held.approval!.id;
}

describe('approval waiters', () => {
  it('an aborted signal wakes the sleeper and removes it', async () => {
    const waiters = createApprovalWaiters();
    const abort = new AbortController();
    const sleeping = waiters.sleep('t\napr', 60_000, abort.signal);
    expect(waiters.sleeping).toBe(1);
    abort.abort();
    await sleeping;
    expect(waiters.sleeping).toBe(0);
    await waiters.sleep('t\napr', 60_000, abort.signal);
    expect(waiters.sleeping).toBe(0);
  });
});

describe('getApproval with wait', () => {
  it('ends when the caller aborts, answering the approval as last read', async () => {
    const id = await pending();
    const abort = new AbortController();
    const waiting = gh.getApproval(id, { wait: 60 }, { signal: abort.signal });
    await reads.reach(2);
    abort.abort();
    expect(await waiting).toMatchObject({ id, status: 'pending' });
    const after = reads.count();
    // Nothing is left polling: another wait on the same approval is the only reader now.
    await gh.getApproval(id, {});
    expect(reads.count()).toBe(after + 1);
  });
});

describe('wait_for_approval (MCP)', () => {
  it('stops waiting when the client cancels the call', async () => {
    const id = await pending();
    const running: Promise<unknown>[] = [];
    const server = createMcpServer({ gatehouse: gh, onToolCall: (call) => running.push(call) });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      const abort = new AbortController();
      const call = client.callTool(
        {
          name: 'wait_for_approval',
          arguments: {
            approval_id: id,
            session_id: 's1',
            action: 'payments.transfer',
            params: { amount: 9000 },
            timeout_seconds: 60,
          },
        },
        undefined,
        { signal: abort.signal },
      );
      await reads.reach(3);
      abort.abort();
      await expect(call).rejects.toThrow();
      // The cancellation reaches the server's wait, which ends now instead of after 60 s.
      expect(running).toHaveLength(1);
      await running[0];
      const after = reads.count();
      await gh.getApproval(id, {});
      expect(reads.count()).toBe(after + 1);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('GET /v1/approvals/{id}?wait= over loopback', () => {
  let app: HttpApp;
  let server: RunningServer;
  let admin: string;
  /** Resolves with the status the pipeline logged when it finished a request to `path`. */
  let finished: (path: string) => Promise<number>;

  beforeEach(async () => {
    admin = (
      await createApiKey(store, { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() })
    ).secret;
    const done = new Map<string, (status: number) => void>();
    const logged = new Map<string, number>();
    const logger = pino(
      { level: 'debug' },
      {
        write(line: string) {
          const entry = JSON.parse(line) as { msg?: string; path?: string; status?: number };
          if (entry.msg !== 'request' || entry.path === undefined) return;
          logged.set(entry.path, entry.status!);
          done.get(entry.path)?.(entry.status!);
        },
      },
    );
    finished = (path) =>
      new Promise((resolve) => {
        const status = logged.get(path);
        if (status !== undefined) resolve(status);
        else done.set(path, resolve);
      });
    app = createHttpApp({ gatehouse: gh, rateLimit: false, logger });
  });
  afterEach(async () => {
    app.close();
    await server?.close(100);
  });

  /** Starts a wait on a raw socket, lets it poll, destroys the socket, awaits the end of the handler. */
  async function abandonWait(): Promise<void> {
    const id = await pending();
    const path = `/v1/approvals/${id}`;
    const socket = connect(server.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET ${path}?wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
    await reads.reach(reads.count() + 2);
    socket.destroy();
    // The handler returns long before its 60 s: the wait ended when the client went away.
    expect(await finished(path)).toBe(200);
    const after = reads.count();
    expect((await app.request(path, { headers: { authorization: `Bearer ${admin}` } })).status).toBe(200);
    expect(reads.count()).toBe(after + 1);
  }

  it('ends when the client goes away (node:http face)', async () => {
    server = await startHttpServer(app, { port: 0 });
    await abandonWait();
  });

  it('ends when the client goes away (web face behind @hono/node-server, which aborts the request signal)', async () => {
    // A fetch function the app does not know: served through @hono/node-server's converter.
    server = await startHttpServer((request) => app.fetch(request), { port: 0 });
    await abandonWait();
  });
});
