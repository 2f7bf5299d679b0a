/**
 * The MCP tools driven by the real SDK Client over an in-memory transport pair.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type CreateMcpServerOptions, createMcpServer } from '../../adapters/mcp/index.js';
import type { Decision, Gatehouse, HistoryPage, RecordStateResult } from '../../src/index.js';
import { budgetGatehouse, textOf } from './fixtures.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function connect(gatehouse: Gatehouse, options: Omit<CreateMcpServerOptions, 'gatehouse'> = {}) {
  const server = createMcpServer({ gatehouse, ...options });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(async () => {
    await client.close();
    await server.close();
    await gatehouse.store.close();
  });
  return client;
}

const userBudget = (gh: Gatehouse, session = 's1', value = '5000') =>
  gh.recordState({ session_id: session, key: 'budget.limit', value, type: 'fact', source: 'user_input' });

describe('MCP tools (in-memory)', () => {
  it('lists the tools with input and output schemas and annotations', async () => {
    const client = await connect(budgetGatehouse());
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual([
      'evaluate_gate',
      'list_state',
      'read_history',
      'record_state',
      'resolve_conflict',
      'wait_for_approval',
    ]);
    for (const tool of tools) {
      expect(tool.title, tool.name).toBeTruthy();
      expect(tool.description?.length, tool.name).toBeGreaterThan(80);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.annotations?.openWorldHint, tool.name).toBe(false);
    }
    const record = byName['record_state']!;
    expect(record.inputSchema.required).toEqual(['session_id', 'key', 'value', 'type', 'source']);
    expect(record.inputSchema['additionalProperties']).toBe(false);
    expect(Object.keys(record.inputSchema.properties ?? {})).toEqual([
      'session_id',
      'key',
      'value',
      'type',
      'source',
      'expected_version',
      'metadata',
    ]);
    expect(record.outputSchema?.required).toEqual(['outcome', 'changed', 'item', 'conflict', 'event_id']);
    expect(record.description).toContain('You may claim: tool_output (trust 2');
    expect(record.description).not.toContain('user_input (trust');
    expect(record.description).toContain('higher-trust source (system 4, user_input 3)');
    expect(record.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });

    const gate = byName['evaluate_gate']!;
    expect(gate.inputSchema.required).toEqual(['session_id', 'action']);
    expect((gate.inputSchema.properties as any).params).toMatchObject({ type: 'object' });
    expect(gate.description).toContain('BEFORE any consequential action');
    expect(gate.description).toContain('Block: do NOT perform the action');
    expect(gate.outputSchema?.required).toContain('verdict');

    expect(byName['read_history']!.annotations?.readOnlyHint).toBe(true);
    expect(byName['read_history']!.inputSchema.required ?? []).toEqual([]);
    expect(byName['list_state']!.annotations?.readOnlyHint).toBe(true);
    expect(byName['resolve_conflict']!.inputSchema.required).toEqual(['conflict_id', 'resolution']);
  });

  it('record_state records a tool output and says what happened', async () => {
    const gh = budgetGatehouse();
    const client = await connect(gh);
    const result = await client.callTool({
      name: 'record_state',
      arguments: {
        session_id: 's1',
        key: ' Account.Balance ',
        value: '1200',
        type: 'fact',
        source: 'tool_output',
        metadata: { tool: 'bank.balance' },
      },
    });
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as RecordStateResult;
    expect(structured).toMatchObject({
      outcome: 'created',
      changed: true,
      conflict: null,
      item: {
        session_id: 's1',
        key: 'account.balance',
        value: '1200',
        source: 'tool_output',
        trust: 2,
        version: 1,
      },
    });
    expect(structured.event_id).toMatch(/^evt_/);
    expect(textOf(result)).toBe(
      'Recorded account.balance = "1200" (fact from tool_output, trust 2, version 1).',
    );
    expect((await gh.getItem('s1', 'account.balance')).metadata).toEqual({ tool: 'bank.balance' });

    const again = await client.callTool({
      name: 'record_state',
      arguments: {
        session_id: 's1',
        key: 'account.balance',
        value: '1200',
        type: 'fact',
        source: 'tool_output',
      },
    });
    expect(again.structuredContent).toMatchObject({ outcome: 'unchanged', changed: false, event_id: null });
    expect(textOf(again)).toMatch(/^Unchanged: /);
  });

  it('record_state cannot overwrite a higher-trust value: a conflict is recorded, not an error', async () => {
    const gh = budgetGatehouse();
    await userBudget(gh);
    const client = await connect(gh);
    const result = await client.callTool({
      name: 'record_state',
      arguments: {
        session_id: 's1',
        key: 'budget.limit',
        value: '50000',
        type: 'fact',
        source: 'tool_output',
      },
    });
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as RecordStateResult;
    expect(structured.outcome).toBe('conflict');
    expect(structured.item).toMatchObject({ value: '5000', source: 'user_input', status: 'conflicted' });
    expect(structured.conflict).toMatchObject({
      status: 'open',
      proposed: { value: '50000', source: 'tool_output' },
    });
    expect(textOf(result)).toContain(
      `Conflict: "50000" from tool_output (trust 2) did NOT replace budget.limit = "5000"`,
    );
    expect(textOf(result)).toContain(structured.conflict!.conflict_id);
    expect((await gh.getItem('s1', 'budget.limit')).value).toBe('5000');
  });

  it('masks secret values in the text but returns the structured item as the HTTP API does', async () => {
    const client = await connect(budgetGatehouse());
    const token = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
    const result = await client.callTool({
      name: 'record_state',
      arguments: { session_id: 's1', key: 'github.token', value: token, type: 'fact', source: 'tool_output' },
    });
    expect((result.structuredContent as RecordStateResult).item).toMatchObject({
      value: token,
      sensitivity: 'secret',
    });
    expect(textOf(result)).not.toContain(token);
    expect(textOf(result)).toContain('[secret masked]');
  });

  it('evaluate_gate: a Block is a normal result the model can read', async () => {
    const gh = budgetGatehouse();
    await userBudget(gh);
    const client = await connect(gh);
    const result = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 's1', action: 'payments.transfer', params: { amount: 9000, to: 'ACME' } },
    });
    expect(result.isError).toBeFalsy();
    const decision = result.structuredContent as Decision;
    expect(decision).toMatchObject({
      verdict: 'Block',
      allowed: false,
      session_id: 's1',
      action: 'payments.transfer',
      state_versions: { 'budget.limit': 1 },
      policy: { revision: gh.policy.revision },
    });
    expect(decision.reasons).toEqual([
      {
        rule: 'over_budget',
        verdict: 'Block',
        message: 'Transfer of 9000 exceeds the budget of 5000.',
        keys: ['budget.limit'],
      },
    ]);
    expect(textOf(result)).toBe(
      `Block: Transfer of 9000 exceeds the budget of 5000. (decision ${decision.decision_id}; keys budget.limit)\nDo not perform this action.`,
    );
    // The decision is the one the core recorded.
    expect(await gh.getDecision(decision.decision_id)).toMatchObject({
      verdict: 'Block',
      params: { amount: 9000 },
    });

    const ok = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 's1', action: 'payments.transfer', params: { amount: 100 } },
    });
    expect(ok.structuredContent).toMatchObject({ verdict: 'Allow', allowed: true });
    expect(textOf(ok)).toMatch(/^Allow: .+ \(decision dec_\w+; keys budget\.limit\)$/);
  });

  it('evaluate_gate blocks an action whose required state is missing', async () => {
    const client = await connect(budgetGatehouse());
    const result = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 's1', action: 'payments.transfer', params: { amount: 1 } },
    });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ verdict: 'Block' });
    expect(textOf(result)).toMatch(/^Block: .*budget\.limit/);
  });

  it('read_history pages through the hash-chained events', async () => {
    const gh = budgetGatehouse();
    await userBudget(gh);
    await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
    await gh.evaluate({ session_id: 's2', action: 'email.send' });
    const client = await connect(gh);

    const all = await client.callTool({ name: 'read_history', arguments: {} });
    expect(all.isError).toBeFalsy();
    const page = all.structuredContent as HistoryPage;
    expect(page.events.map((e) => e.type)).toEqual(['gate_evaluation', 'gate_evaluation', 'state_change']);
    expect(page.next_cursor).toBeNull();
    expect(textOf(all).split('\n')[0]).toBe('3 event(s).');
    expect(textOf(all)).toContain('payments.transfer → Block');

    const first = await client.callTool({
      name: 'read_history',
      arguments: { session_id: 's1', limit: 1, order: 'asc' },
    });
    const p1 = first.structuredContent as HistoryPage;
    expect(p1.events.map((e) => [e.seq, e.type])).toEqual([[1, 'state_change']]);
    expect(textOf(first)).toContain(`cursor "${p1.next_cursor}"`);
    const second = await client.callTool({
      name: 'read_history',
      arguments: { session_id: 's1', limit: 1, order: 'asc', cursor: p1.next_cursor },
    });
    expect((second.structuredContent as HistoryPage).events.map((e) => e.type)).toEqual(['gate_evaluation']);

    const decisions = await client.callTool({
      name: 'read_history',
      arguments: { type: 'gate_evaluation', session_id: 's2' },
    });
    expect((decisions.structuredContent as HistoryPage).events).toHaveLength(1);
  });

  it('list_state shows items and open conflicts; resolve_conflict is capped by trust', async () => {
    const gh = budgetGatehouse();
    await userBudget(gh);
    await gh.recordState({
      session_id: 's1',
      key: 'budget.limit',
      value: '7000',
      type: 'fact',
      source: 'retrieval',
    });
    const capped = await connect(gh);
    const listed = await capped.callTool({ name: 'list_state', arguments: { session_id: 's1' } });
    expect(listed.isError).toBeFalsy();
    const state = listed.structuredContent as {
      items: Array<{ key: string }>;
      conflicts: Array<{ conflict_id: string }>;
    };
    expect(state.items.map((i) => i.key)).toEqual(['budget.limit']);
    expect(state.conflicts).toHaveLength(1);
    const conflictId = state.conflicts[0]!.conflict_id;
    expect(textOf(listed)).toContain('Session s1: 1 item(s), 1 open conflict(s).');
    expect(textOf(listed)).toContain(`conflict ${conflictId} on budget.limit`);

    const refused = await capped.callTool({
      name: 'resolve_conflict',
      arguments: { conflict_id: conflictId, resolution: 'accept_proposed' },
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^forbidden: Resolving this conflict needs trust 3/);

    const trusted = await connect(gh, { context: { allowedSources: ['user_input'] } });
    const resolved = await trusted.callTool({
      name: 'resolve_conflict',
      arguments: { conflict_id: conflictId, resolution: 'accept_proposed', note: 'user confirmed' },
    });
    expect(resolved.isError).toBeFalsy();
    expect(resolved.structuredContent).toMatchObject({ status: 'resolved', resolution: 'accept_proposed' });
    expect(textOf(resolved)).toBe(`Resolved ${conflictId} (accept_proposed): budget.limit is now "7000".`);
    expect((await gh.getItem('s1', 'budget.limit')).value).toBe('7000');

    const missing = await trusted.callTool({
      name: 'resolve_conflict',
      arguments: { conflict_id: 'cfl_nope', resolution: 'keep_current' },
    });
    expect(textOf(missing)).toBe("not_found: Conflict 'cfl_nope' was not found.");
  });

  it('bad input is an isError result with a precise message', async () => {
    const client = await connect(budgetGatehouse());
    const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
    const base = { session_id: 's1', key: 'budget.limit', value: '1', type: 'fact', source: 'tool_output' };

    // Rejected by the SDK against the contract schema, before the tool runs.
    const unknownField = await call('record_state', { ...base, colour: 'red' });
    expect(unknownField.isError).toBe(true);
    expect(textOf(unknownField)).toMatch(/^MCP error -32602: Input validation error: .*colour/s);
    const numberValue = await call('record_state', { ...base, value: 5000 });
    expect(textOf(numberValue)).toMatch(
      /Input validation error: .*expected string, received number at value/s,
    );
    const emptySession = await call('evaluate_gate', { session_id: '', action: 'x.y' });
    expect(textOf(emptySession)).toContain('session_id must not be empty at session_id');
    const noSession = await call('evaluate_gate', { action: 'payments.transfer' });
    expect(noSession.isError).toBe(true);
    expect(textOf(noSession)).toContain(
      'session_id is required (this server has no default session) at session_id',
    );
    const notObject = await call('evaluate_gate', { session_id: 's1', action: 'x.y', params: [1] });
    expect(textOf(notObject)).toMatch(/Input validation error: .*expected object, received array at params/s);
    const badLimit = await call('read_history', { limit: 501 });
    expect(textOf(badLimit)).toContain('limit must be at most 500 at limit');

    // Rejected by the core with its own code and message.
    const badKey = await call('record_state', { ...base, key: 'budget' });
    expect(badKey.isError).toBe(true);
    expect(textOf(badKey)).toMatch(/^invalid_request: .*budget/);
    const badType = await call('record_state', { ...base, type: 'opinion' });
    expect(textOf(badType)).toBe(
      "invalid_request: Unknown type 'opinion'; allowed: fact, assumption, preference, constraint.",
    );
    const badSource = await call('record_state', { ...base, source: 'oracle' });
    expect(textOf(badSource)).toMatch(
      /^invalid_request: Unknown source 'oracle'; allowed: system, user_input/,
    );
    const staleVersion = await call('record_state', { ...base, expected_version: 3 });
    expect(textOf(staleVersion)).toBe(
      "version_conflict: Item 'budget.limit' is at version 0, not the expected 3.",
    );
    const badCursor = await call('read_history', { cursor: 'garbage' });
    expect(textOf(badCursor)).toMatch(/^invalid_request: /);
  });

  it('caps the sources a model may claim (default: no user_input, no system)', async () => {
    const gh = budgetGatehouse();
    const client = await connect(gh);
    for (const source of ['user_input', 'system']) {
      const result = await client.callTool({
        name: 'record_state',
        arguments: { session_id: 's1', key: 'budget.limit', value: '1000000', type: 'fact', source },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(
        `forbidden: This caller may not write state with source '${source}'; it may use: tool_output, retrieval, agent_inference.`,
      );
    }
    expect(await gh.listItems('s1')).toEqual([]);

    const allowed = await connect(gh, { context: { allowedSources: ['user_input'] } });
    const result = await allowed.callTool({
      name: 'record_state',
      arguments: { session_id: 's1', key: 'budget.limit', value: '1000', type: 'fact', source: 'user_input' },
    });
    expect(result.structuredContent).toMatchObject({ outcome: 'created' });
    const { tools } = await allowed.listTools();
    expect(tools.find((t) => t.name === 'record_state')?.description).toContain(
      'You may claim: user_input (trust 3',
    );
  });

  it('uses the default session when a call gives none', async () => {
    const gh = budgetGatehouse();
    await userBudget(gh, 'other');
    const client = await connect(gh, { defaultSessionId: 's1' });
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'record_state')?.inputSchema.required).toEqual([
      'key',
      'value',
      'type',
      'source',
    ]);
    expect(tools.find((t) => t.name === 'evaluate_gate')?.inputSchema.required).toEqual(['action']);
    expect(tools.find((t) => t.name === 'list_state')?.inputSchema.required ?? []).toEqual([]);

    const recorded = await client.callTool({
      name: 'record_state',
      arguments: { key: 'budget.limit', value: '5000', type: 'fact', source: 'tool_output' },
    });
    expect(recorded.structuredContent).toMatchObject({ item: { session_id: 's1', value: '5000' } });
    const decision = await client.callTool({
      name: 'evaluate_gate',
      arguments: { action: 'payments.transfer', params: { amount: 9000 } },
    });
    expect(decision.structuredContent).toMatchObject({ session_id: 's1', verdict: 'Block' });
    const history = await client.callTool({ name: 'read_history', arguments: {} });
    const sessions = (history.structuredContent as HistoryPage).events.map((e) => e.session_id);
    expect(new Set(sessions)).toEqual(new Set(['s1']));
    const listed = await client.callTool({ name: 'list_state', arguments: {} });
    expect(listed.structuredContent).toMatchObject({ session_id: 's1', items: [{ key: 'budget.limit' }] });
    // An explicit session still wins.
    const explicit = await client.callTool({ name: 'list_state', arguments: { session_id: 'other' } });
    expect(explicit.structuredContent).toMatchObject({
      session_id: 'other',
      items: [{ source: 'user_input' }],
    });
  });

  it('refuses an invalid default session at creation', () => {
    const gh = budgetGatehouse();
    expect(() => createMcpServer({ gatehouse: gh, defaultSessionId: 'has space' })).toThrow(
      /default session_id: \(root\): session_id must be printable ASCII without spaces/,
    );
  });

  it('a tool outside the granted scopes answers forbidden', async () => {
    const client = await connect(budgetGatehouse(), { context: { scopes: ['history:read'] } });
    const result = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 's1', action: 'a.b' },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("forbidden: This API key lacks the 'gate:evaluate' scope.");
    const history = await client.callTool({ name: 'read_history', arguments: {} });
    expect(history.isError).toBeFalsy();
  });

  it('an unexpected failure is a generic internal error; the detail goes only to the log', async () => {
    const gh = budgetGatehouse();
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const client = await connect(gh, { logger });
    await gh.store.close();
    const result = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 's1', action: 'a.b' },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('internal: An internal error occurred.');
    expect(lines.join('')).toContain('MCP tool failed');
  });

  it('serves session state and recent decisions as resources', async () => {
    const gh = budgetGatehouse();
    await userBudget(gh);
    await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
    const client = await connect(gh, { defaultSessionId: 's1' });

    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
      'gatehouse://sessions/{session_id}/decisions',
      'gatehouse://sessions/{session_id}/state',
    ]);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual([
      'gatehouse://sessions/s1/decisions',
      'gatehouse://sessions/s1/state',
    ]);

    const read = async (uri: string) => {
      const [content] = (await client.readResource({ uri })).contents;
      expect(content).toMatchObject({ uri, mimeType: 'application/json' });
      return JSON.parse(content && 'text' in content ? content.text : '') as unknown;
    };
    const body = await read('gatehouse://sessions/s1/state');
    expect(body).toMatchObject({
      session_id: 's1',
      items: [{ key: 'budget.limit', value: '5000' }],
      conflicts: [],
    });
    const page = (await read('gatehouse://sessions/s1/decisions')) as HistoryPage;
    expect(page.events.map((e) => [e.type, e.data['verdict']])).toEqual([['gate_evaluation', 'Block']]);

    await expect(client.readResource({ uri: 'gatehouse://sessions/%20/state' })).rejects.toThrow(
      /invalid_request: Invalid session_id/,
    );
  });
});
