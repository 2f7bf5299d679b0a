/**
 * The record_state tool's answer is read by the model (and kept in its transcript and traces):
 * a secret in force is never quoted in it, as the MCP face masks it in its text.
 */
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRecordStateTool } from '../../adapters/langchain/index.js';
import type { Gatehouse } from '../../src/index.js';
import { createTestGatehouse, scriptedModel, toolMessages } from './agentFixtures.js';

let gatehouse: Gatehouse;

beforeEach(() => {
  gatehouse = createTestGatehouse();
});

afterEach(async () => {
  await gatehouse.store.close();
});

describe('createRecordStateTool and secrets', () => {
  it('does not quote a secret value in force when the model proposes another one', async () => {
    const secret = 'correct-horse-battery-staple-42';
    await gatehouse.recordState({
      session_id: 's1',
      key: 'db.password',
      value: secret,
      type: 'fact',
      source: 'user_input',
    });
    const agent = createAgent({
      model: scriptedModel('record_state', { key: 'db.password', value: 'guess', type: 'fact' }),
      tools: [createRecordStateTool({ backend: gatehouse })],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'remember' }] },
      { configurable: { thread_id: 's1' } },
    );
    const content = String(toolMessages(result.messages)[0]?.content);
    expect(JSON.parse(content)).toMatchObject({ outcome: 'conflict' });
    expect(content).not.toContain(secret);
    expect(content).toContain('[secret masked]');
  });
});
