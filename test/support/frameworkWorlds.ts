/**
 * What the AI SDK and OpenAI Agents tests share: a transfer policy with every verdict (Allow, Warn,
 * Block, a hold for a `finance` approver), and the two worlds every scenario runs in — the
 * embedded store (an in-process core on SQLite) and the real `/v1` server on loopback with the
 * client as the backend, where a person approves over HTTP with an approver key.
 */
import { createServer } from 'node:net';
import { createGatehouseClient } from '../../adapters/client/index.js';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { type GateBackend, inProcessBackend } from '../../adapters/toolgate/index.js';
import {
  type Approval,
  type CallContext,
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type HistoryEvent,
  systemRandomBytes,
} from '../../src/index.js';

/** The major version of the Node running the tests: AI SDK 7 and OpenAI Agents declare Node ≥ 22. */
export const nodeMajor = Number(process.versions.node.split('.')[0]);

/**
 * `transfer_money`: to mallory is refused, over the budget is held for `finance`, above 1000 warns.
 * The rules read the arguments as the tool parses them (`to` trimmed and lower-cased, defaulted).
 */
export const TRANSFER_POLICY = `
version: 1
actions:
  transfer_money:
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: blocked_recipient
        when: "params.to == 'mallory'"
        verdict: Block
        message: "Transfers to {params.to} are not allowed"
      - name: over_budget
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
        approval: { expires_in: 15m, approvers: [finance] }
      - name: large_transfer
        when: "double(params.amount) > 1000.0"
        verdict: Warn
        message: "Transfer of {params.amount} is large"
`;

/** What the tool's schema does to the model's arguments: the recipient defaults, trimmed, lower-cased. */
export const DEFAULT_RECIPIENT = 'acct-9';

/** One place a face is tested against. */
export interface World {
  name: 'embedded' | 'http';
  /** What the face is given. */
  backend: GateBackend;
  /** A person approves (with the `finance` approver's key, over HTTP in the `http` world). */
  approve(approvalId: string): Promise<void>;
  /** A person denies. */
  deny(approvalId: string): Promise<void>;
  getApproval(approvalId: string): Promise<Approval>;
  /** The session's history, oldest first. */
  history(sessionId: string): Promise<HistoryEvent[]>;
  close(): Promise<void>;
}

const FINANCE: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };

function freshGatehouse(): Gatehouse {
  return createGatehouse({ store: openSqliteStore(), policy: compilePolicy(TRANSFER_POLICY) });
}

async function historyOf(read: Gatehouse['readHistory'], sessionId: string): Promise<HistoryEvent[]> {
  return (await read({ session_id: sessionId, order: 'asc', limit: 500 })).events;
}

/** The embedded store: an in-process core on SQLite; the agent is `key_agent`. */
export function embeddedWorld(): World {
  const gatehouse = freshGatehouse();
  return {
    name: 'embedded',
    backend: inProcessBackend(gatehouse, { keyId: 'key_agent' }),
    approve: async (id) => void (await gatehouse.approve(id, { comment: 'checked' }, FINANCE)),
    deny: async (id) => void (await gatehouse.deny(id, { comment: 'no' }, FINANCE)),
    getApproval: (id) => gatehouse.getApproval(id),
    history: (sessionId) => historyOf((q) => gatehouse.readHistory(q), sessionId),
    close: () => gatehouse.store.close(),
  };
}

/** The real `/v1` server on loopback; the agent and the approver each have their own key. */
export async function httpWorld(): Promise<World> {
  const gatehouse = freshGatehouse();
  const server: RunningServer = await startHttpServer(createHttpApp({ gatehouse, rateLimit: false }).fetch, {
    port: 0,
  });
  const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  const agentKey = await createApiKey(gatehouse.store, deps, {
    scopes: ['gate:evaluate', 'state:write', 'history:read'],
  });
  const financeKey = await createApiKey(gatehouse.store, deps, {
    scopes: ['approvals:decide', 'history:read'],
    labels: ['finance'],
  });
  const agent = createGatehouseClient({ baseUrl: server.url, apiKey: agentKey.secret, timeoutMs: 5000 });
  const person = createGatehouseClient({ baseUrl: server.url, apiKey: financeKey.secret, timeoutMs: 5000 });
  return {
    name: 'http',
    backend: agent,
    approve: async (id) => void (await person.approve(id, { comment: 'checked' })),
    deny: async (id) => void (await person.deny(id, { comment: 'no' })),
    getApproval: (id) => person.getApproval(id),
    history: (sessionId) => historyOf((q) => agent.readHistory(q), sessionId),
    close: async () => {
      await server.close(0);
      await gatehouse.store.close();
    },
  };
}

/** Both worlds, by name, for `describe.each`. */
export const WORLDS = [
  ['embedded', async () => embeddedWorld()],
  ['http', httpWorld],
] as const satisfies ReadonlyArray<readonly [World['name'], () => Promise<World>]>;

/** Records a 5000 budget, stated by the user, in `sessionId`. */
export async function recordBudget(backend: GateBackend, sessionId: string): Promise<void> {
  await backend.recordState({
    session_id: sessionId,
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
  });
}

/**
 * A client for a loopback port where nothing listens: Gatehouse is down. The port was just free
 * (bound, then released), so the connection is refused at once.
 */
export async function downBackend(): Promise<GateBackend> {
  const port = await new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
  return createGatehouseClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'ghk_down', timeoutMs: 2000 });
}

/** The `action_outcome` events of a session. */
export async function outcomesOf(world: World, sessionId: string): Promise<Array<Record<string, unknown>>> {
  return (await world.history(sessionId)).filter((e) => e.type === 'action_outcome').map((e) => e.data);
}

/** The `gate_evaluation` events of a session. */
export async function decisionsOf(world: World, sessionId: string): Promise<Array<Record<string, unknown>>> {
  return (await world.history(sessionId)).filter((e) => e.type === 'gate_evaluation').map((e) => e.data);
}
