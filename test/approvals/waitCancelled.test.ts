/**
 * `wait_for_approval` whose client cancels the call just as the approval arrives: the call's
 * answer reaches nobody, so it must not take the approval's use (an Allow recorded for a call the
 * agent never learnt of, and the person asked again for the same action).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpServer } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CallContext,
  compilePolicy,
  createGatehouse,
  type Gatehouse,
  type Store,
} from '../../src/index.js';
import { APPROVAL_POLICY } from '../support/policies.js';

const finance: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };
const call = { session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } };

let store: Store;
let gh: Gatehouse;

beforeEach(async () => {
  store = openSqliteStore();
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

describe('wait_for_approval cancelled by its client', () => {
  it('does not use the approval when the call was cancelled before it evaluates', async () => {
    const id = (await gh.evaluate(call)).approval!.id;
    await gh.approve(id, {}, finance);

    const abort = new AbortController();
    const running: Promise<unknown>[] = [];
    const server = createMcpServer({
      gatehouse: gh,
      onToolCall: (c) => running.push(c),
      // The credential check before the release: the client cancels while it runs.
      checkCaller: async () => {
        abort.abort();
        await new Promise((resolve) => setTimeout(resolve, 50));
      },
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      const result = client.callTool(
        { name: 'wait_for_approval', arguments: { approval_id: id, ...call } },
        undefined,
        { signal: abort.signal },
      );
      await expect(result).rejects.toThrow();
      expect(running).toHaveLength(1);
      await running[0];
      expect(await gh.getApproval(id)).toMatchObject({ status: 'approved', uses_left: 1 });
    } finally {
      await client.close();
      await server.close();
    }
  });
});
