/**
 * A function tool in a `toolNamespace()`: the run state keeps its approvals under the namespaced
 * name. Approving it in the run alone must not run a call Gatehouse holds.
 */
import { Agent, run, setTracingDisabled, tool, toolNamespace } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ApprovalRequest, gateTools } from '../../adapters/openai-agents/index.js';
import { embeddedWorld, nodeMajor, recordBudget } from '../support/frameworkWorlds.js';
import { transferParameters } from './openaiAgentsFixtures.js';

beforeAll(() => {
  setTracingDisabled(true);
});

describe.skipIf(nodeMajor < 22)('OpenAI Agents gateTools with a namespaced tool', () => {
  it('a held call approved in the run state only does not run', async () => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'ns-1');
    const sent: unknown[] = [];
    const [transfer] = toolNamespace({
      name: 'bank',
      description: 'Banking tools.',
      tools: [
        tool({
          name: 'transfer_money',
          description: 'Transfers money.',
          parameters: transferParameters,
          execute: async (input) => {
            sent.push(input);
            return 'sent';
          },
        }),
      ],
    });
    const respond = modelResponder(({ request }) => {
      const input = typeof request.input === 'string' ? [] : request.input;
      const last = input.at(-1) as { type?: string } | undefined;
      return last?.type === 'function_call_result'
        ? [assistantMessage('done')]
        : [functionCall('transfer_money', { amount: 9000 }, { callId: 'call_1', namespace: 'bank' })];
    });
    const agent = new Agent({
      name: 'payer',
      instructions: 'Pay.',
      model: new ScriptedModel(Array.from({ length: 5 }, () => respond)),
      tools: [transfer!],
    });
    const requests: ApprovalRequest[] = [];
    gateTools(agent, {
      backend: world.backend,
      sessionId: 'ns-1',
      onApprovalRequest: (request) => void requests.push(request),
    });
    const first = await run(agent, 'pay 9000');
    expect(first.interruptions).toHaveLength(1);
    expect(requests).toHaveLength(1);
    // The app approves in the run state; nobody approved in Gatehouse.
    first.state.approve(first.interruptions[0]!);
    await run(agent, first.state);
    expect(sent).toEqual([]);
    expect((await world.getApproval(requests[0]!.approval_id)).status).toBe('pending');
    await world.close();
  });
});
