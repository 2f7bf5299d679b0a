/**
 * The record_state tool: the model picks key, value and type; configuration fixes the source
 * and the session.
 */
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRecordStateTool, inProcessBackend } from '../../adapters/langchain/index.js';
import { DEFAULT_TYPES, type Gatehouse } from '../../src/index.js';
import { createTestGatehouse, recordBudget, scriptedModel, toolMessages } from './agentFixtures.js';

let gatehouse: Gatehouse;

beforeEach(() => {
  gatehouse = createTestGatehouse();
});

afterEach(async () => {
  await gatehouse.store.close();
});

async function runTool(args: Record<string, unknown>, tool = createRecordStateTool({ backend: gatehouse })) {
  const agent = createAgent({ model: scriptedModel('record_state', args), tools: [tool] });
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: 'remember' }] },
    { configurable: { thread_id: 's1' } },
  );
  return JSON.parse(String(toolMessages(result.messages)[0]?.content)) as Record<string, unknown>;
}

describe('createRecordStateTool', () => {
  it('records with the configured source (agent_inference by default), ignoring a source the model adds', async () => {
    const answer = await runTool({ key: 'trip.city', value: 'Paris', type: 'assumption', source: 'system' });
    expect(answer).toMatchObject({ recorded: true, outcome: 'created', key: 'trip.city', version: 1 });
    expect(await gatehouse.getItem('s1', 'trip.city')).toMatchObject({
      value: 'Paris',
      type: 'assumption',
      source: 'agent_inference',
      trust: 1,
    });
  });

  it('cannot overwrite what the user stated: the guess becomes a conflict the model is told about', async () => {
    await recordBudget(gatehouse, 's1');
    const answer = await runTool({ key: 'budget.limit', value: 999999, type: 'fact' });
    expect(answer).toMatchObject({ recorded: false, outcome: 'conflict', status: 'conflicted' });
    expect(String(answer['note'])).toContain("'5000'");
    expect((await gatehouse.getItem('s1', 'budget.limit')).value).toBe('5000');
  });

  it('returns an invalid key to the model to fix instead of failing the run', async () => {
    const answer = await runTool({ key: 'nodots', value: 'x', type: 'fact' });
    expect(answer).toMatchObject({ recorded: false, error: 'invalid_request' });
    expect(await gatehouse.listItems('s1')).toEqual([]);
  });

  it('uses a fixed sessionId and source when configured', async () => {
    const tool = createRecordStateTool({
      backend: inProcessBackend(gatehouse, { allowedSources: ['user_input'] }),
      sessionId: 'pinned',
      source: 'user_input',
    });
    await runTool({ key: 'user.name', value: 'Ada', type: 'fact' }, tool);
    expect(await gatehouse.getItem('pinned', 'user.name')).toMatchObject({ source: 'user_input' });
    expect(await gatehouse.listItems('s1')).toEqual([]);
  });

  it('a bare invoke takes its session from configurable (a tool sees the config; a callback does not)', async () => {
    const tool = createRecordStateTool({ backend: gatehouse });
    await tool.invoke(
      { key: 'user.name', value: 'Ada', type: 'fact' },
      { configurable: { thread_id: 't9' } },
    );
    expect(await gatehouse.getItem('t9', 'user.name')).toMatchObject({ value: 'Ada' });
    await expect(tool.invoke({ key: 'user.name', value: 'Ada', type: 'fact' })).rejects.toThrow(/no session/);
  });

  it("offers the core's default state types", () => {
    const tool = createRecordStateTool({ backend: gatehouse });
    const schema = tool.schema as unknown as { shape: { type: { options: string[] } } };
    expect(schema.shape.type.options).toEqual([...DEFAULT_TYPES]);
  });
});
