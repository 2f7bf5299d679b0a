/**
 * A key revoked while its `wait_for_approval` call waits: nothing written after a revocation may
 * act for that key. The approval may still be decided, but the waiting call must not evaluate
 * again for the revoked key and hand its agent an Allow.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  systemRandomBytes,
} from '../../src/index.js';
import { APPROVAL_POLICY } from '../support/policies.js';
import { textOf } from './fixtures.js';

let gh: Gatehouse;
let server: RunningServer;

beforeAll(async () => {
  gh = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(APPROVAL_POLICY) });
  const app = createHttpApp({
    gatehouse: gh,
    rateLimit: false,
    mcp: createMcpHttpHandler({ gatehouse: gh }),
  });
  server = await startHttpServer(app.fetch, { port: 0 });
});

afterAll(async () => {
  await server.close();
  await gh.store.close();
});

const deps = () => ({ ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() });

describe('wait_for_approval with a key revoked while it waits', () => {
  it('answers unauthorized and evaluates nothing for the revoked key', async () => {
    const agent = await createApiKey(gh.store, deps(), {
      scopes: ['state:write', 'gate:evaluate'],
      sources: ['user_input'],
    });
    const approver = await createApiKey(gh.store, deps(), {
      scopes: ['approvals:decide'],
      labels: ['finance'],
    });
    const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${agent.secret}` } },
      }),
    );
    try {
      const call = { session_id: 'pay', action: 'payments.transfer', params: { amount: 9000 } };
      await client.callTool({
        name: 'record_state',
        arguments: {
          session_id: 'pay',
          key: 'budget.limit',
          value: '5000',
          type: 'fact',
          source: 'user_input',
        },
      });
      const held = await client.callTool({ name: 'evaluate_gate', arguments: call });
      const approvalId = (held.structuredContent as { approval?: { id: string } }).approval?.id;
      expect(approvalId, textOf(held)).toBeDefined();

      const waiting = client.callTool({
        name: 'wait_for_approval',
        arguments: { ...call, approval_id: approvalId!, timeout_seconds: 20 },
      });
      await sleep(300);
      expect(await gh.store.revokeApiKey(agent.key.id, new Date().toISOString())).toBe(true);
      const approved = await fetch(`${server.url}/v1/approvals/${approvalId}/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${approver.secret}` },
      });
      expect(approved.status).toBe(200);

      const result = await waiting;
      expect(result.isError, textOf(result)).toBe(true);
      expect(textOf(result)).toMatch(/^unauthorized: /);
      const decisions = await gh.readHistory({ session_id: 'pay', type: 'gate_evaluation' }, {});
      expect(decisions.events.map((e) => e.data['verdict'])).toEqual(['Block']);
    } finally {
      await client.close();
    }
  });
});
