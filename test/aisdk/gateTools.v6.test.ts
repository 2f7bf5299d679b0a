/**
 * AI SDK 6 end to end (installed as `ai-v6`; runs on Node 20 too): `generateText` and `streamText`
 * with a scripted model (`MockLanguageModelV3`), a transfer tool that records what it really sent,
 * and `gateTools` on the embedded store and over HTTP. `needsApproval` turns a hold into the SDK's
 * approval request; `execute` decides again, so only a release in Gatehouse runs a held call.
 */
import { generateText, type ModelMessage, stepCountIs, streamText, tool } from 'ai-v6';
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai-v6/test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ApprovalRequest, type GateToolsOptions, gateTools } from '../../adapters/ai-sdk/index.js';
import {
  DEFAULT_RECIPIENT,
  decisionsOf,
  downBackend,
  embeddedWorld,
  outcomesOf,
  recordBudget,
  WORLDS,
  type World,
} from '../support/frameworkWorlds.js';
import { recordingTransfer, scriptedModelOf, toolResultsSeen, transferInput } from './aiSdkFixtures.js';

/** A scripted ai@6 model that asks for `transfer_money` with `args`, and the prompts it was sent. */
const scriptedModel = (args: Record<string, unknown>) =>
  scriptedModelOf(MockLanguageModelV3, convertArrayToReadableStream as (chunks: unknown[]) => unknown, args);

const USER: ModelMessage[] = [{ role: 'user', content: 'pay' }];

function answered(response: { messages: ModelMessage[] }, approvalId: string): ModelMessage[] {
  return [
    ...USER,
    ...response.messages,
    { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved: true }] },
  ];
}

/** The transfer tool gated with `options`; `needsApproval` is the tool's own, if given. */
function gatedTransfer(options: GateToolsOptions, own: { needsApproval?: boolean; fail?: boolean } = {}) {
  const { execute, calls } = recordingTransfer(own);
  const plain = {
    transfer_money: tool({
      inputSchema: transferInput,
      execute,
      ...(own.needsApproval === undefined ? {} : { needsApproval: own.needsApproval }),
    }),
  };
  return { ...gateTools(plain, options), calls };
}

describe.each(WORLDS)('gateTools with AI SDK 6 on the %s store', (_name, open) => {
  let world: World;
  beforeEach(async () => {
    world = await open();
  });
  afterEach(async () => {
    await world.close();
  });

  /** One generateText with the gated tools; the model's prompts are returned for reading. */
  function run(
    tools: ReturnType<typeof gatedTransfer>['tools'],
    args: Record<string, unknown>,
    messages = USER,
  ) {
    const scripted = scriptedModel(args);
    const result = generateText({ model: scripted.model, tools, messages, stopWhen: stepCountIs(3) });
    return { result, prompts: scripted.prompts };
  }

  it('Allow: the tool runs once with the parsed arguments, decided once, and its outcome is recorded', async () => {
    await recordBudget(world.backend, 'allow-1');
    const gated = gatedTransfer({ backend: world.backend, sessionId: 'allow-1' });
    const result = await run(gated.tools, { amount: 200, to: ' Bob ' }).result;
    expect(gated.calls).toEqual([{ amount: 200, to: 'bob' }]);
    expect(result.text).toBe('done');
    await gated.flush();
    // execute used the decision needsApproval made: one evaluation for one call.
    const decisions = await decisionsOf(world, 'allow-1');
    expect(decisions).toEqual([
      expect.objectContaining({ verdict: 'Allow', params: { amount: 200, to: 'bob' } }),
    ]);
    expect(await outcomesOf(world, 'allow-1')).toEqual([
      expect.objectContaining({ decision_id: decisions[0]!['decision_id'], outcome: 'succeeded' }),
    ]);
  });

  it('Block: the tool never runs and the model reads the reason as the tool’s error', async () => {
    await recordBudget(world.backend, 'block-1');
    const gated = gatedTransfer({ backend: world.backend, sessionId: 'block-1' });
    const { result, prompts } = run(gated.tools, { amount: 10, to: ' Mallory ' });
    await result;
    expect(gated.calls).toEqual([]);
    expect(toolResultsSeen(prompts.at(-1))).toEqual([
      {
        output: {
          type: 'error-text',
          value: expect.stringMatching(
            /^Blocked by Gatehouse: Transfers to mallory are not allowed \(decision dec_/,
          ),
        },
      },
    ]);
  });

  it('Warn: onWarn hears it, then the tool runs', async () => {
    await recordBudget(world.backend, 'warn-1');
    const onWarn = vi.fn();
    const gated = gatedTransfer({ backend: world.backend, sessionId: 'warn-1', onWarn });
    await run(gated.tools, { amount: 1500 }).result;
    expect(onWarn).toHaveBeenCalledOnce();
    expect(gated.calls).toEqual([{ amount: 1500, to: DEFAULT_RECIPIENT }]);
  });

  it('a hold pauses the run; a forged approval does not run it; after a person approves, the replay runs once with exactly the approved arguments; a second replay is refused', async () => {
    await recordBudget(world.backend, 'hold-1');
    const requests: ApprovalRequest[] = [];
    const gated = gatedTransfer({
      backend: world.backend,
      sessionId: 'hold-1',
      onApprovalRequest: (request) => void requests.push(request),
    });
    const first = await run(gated.tools, { amount: 9000 }).result;
    const request = first.content.find((part) => part.type === 'tool-approval-request');
    expect(request).toMatchObject({ toolCall: { toolCallId: 'call_1' } });
    expect(requests).toEqual([
      expect.objectContaining({ tool_call_id: 'call_1', params: { amount: 9000, to: DEFAULT_RECIPIENT } }),
    ]);
    const approvalId = requests[0]!.approval_id;
    expect(gated.calls).toEqual([]);
    const replay = answered(first.response, request!.approvalId);

    const forged = run(gated.tools, { amount: 9000 }, replay);
    await forged.result;
    expect(gated.calls).toEqual([]);
    expect(toolResultsSeen(forged.prompts.at(-1))[0]!.output).toMatchObject({
      type: 'error-text',
      value: expect.stringContaining(`Held for approval ${approvalId}`),
    });
    expect((await world.getApproval(approvalId)).status).toBe('pending');
    expect(requests).toHaveLength(1);

    await world.approve(approvalId);
    const released = await run(gated.tools, { amount: 9000 }, replay).result;
    expect(gated.calls).toEqual([{ amount: 9000, to: DEFAULT_RECIPIENT }]);
    expect(released.text).toBe('done');
    expect((await world.getApproval(approvalId)).status).toBe('used');

    await run(gated.tools, { amount: 9000 }, replay).result;
    expect(gated.calls).toHaveLength(1);
    await gated.flush();
    expect(await outcomesOf(world, 'hold-1')).toEqual([expect.objectContaining({ outcome: 'succeeded' })]);
  });

  it('changed arguments in the replayed history are refused', async () => {
    await recordBudget(world.backend, 'hold-2');
    const requests: ApprovalRequest[] = [];
    const gated = gatedTransfer({
      backend: world.backend,
      sessionId: 'hold-2',
      onApprovalRequest: (request) => void requests.push(request),
    });
    const first = await run(gated.tools, { amount: 9000 }).result;
    const request = first.content.find((part) => part.type === 'tool-approval-request')!;
    await world.approve(requests[0]!.approval_id);
    const changed = { amount: 9000, to: 'acct-666' };
    const edited = first.response.messages.map((message) =>
      message.role !== 'assistant' || typeof message.content === 'string'
        ? message
        : {
            ...message,
            content: message.content.map((part) =>
              part.type === 'tool-call'
                ? { ...part, input: changed }
                : part.type === 'tool-approval-request'
                  ? { ...part, inputSchemaInput: changed }
                  : part,
            ),
          },
    ) as ModelMessage[];
    await run(gated.tools, { amount: 9000 }, answered({ messages: edited }, request.approvalId)).result;
    expect(gated.calls).toEqual([]);
    expect((await world.getApproval(requests[0]!.approval_id)).status).toBe('approved');
  });

  it("a tool's own needsApproval still asks a person when Gatehouse allows", async () => {
    await recordBudget(world.backend, 'own-1');
    const gated = gatedTransfer({ backend: world.backend, sessionId: 'own-1' }, { needsApproval: true });
    const first = await run(gated.tools, { amount: 10 }).result;
    const request = first.content.find((part) => part.type === 'tool-approval-request')!;
    expect(gated.calls).toEqual([]);
    await run(gated.tools, { amount: 10 }, answered(first.response, request.approvalId)).result;
    expect(gated.calls).toEqual([{ amount: 10, to: DEFAULT_RECIPIENT }]);
  });

  it('a tool that throws is recorded as failed', async () => {
    await recordBudget(world.backend, 'fail-1');
    const gated = gatedTransfer({ backend: world.backend, sessionId: 'fail-1' }, { fail: true });
    await run(gated.tools, { amount: 20 }).result;
    await gated.flush();
    expect(await outcomesOf(world, 'fail-1')).toEqual([
      expect.objectContaining({ outcome: 'failed', detail: 'Error: bank is closed' }),
    ]);
  });
});

describe('gateTools with AI SDK 6, whatever the store', () => {
  it('Gatehouse down: the tool does not run, the model reads that it could not be checked, onError hears why', async () => {
    const onError = vi.fn();
    const gated = gatedTransfer({ backend: await downBackend(), sessionId: 'down-1', onError });
    const scripted = scriptedModel({ amount: 10 });
    await generateText({
      model: scripted.model,
      tools: gated.tools,
      messages: USER,
      stopWhen: stepCountIs(3),
    });
    expect(gated.calls).toEqual([]);
    expect(toolResultsSeen(scripted.prompts.at(-1))).toEqual([
      {
        output: {
          type: 'error-text',
          value: "Gatehouse could not check 'transfer_money' (unavailable), so it did not run.",
        },
      },
    ]);
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ code: 'unavailable' }), {
      stage: 'evaluate',
      action: 'transfer_money',
      toolCallId: 'call_1',
    });
  });

  it('refuses a tool it cannot hold back (no execute) and a gate without a session', () => {
    const backend = embeddedWorld().backend;
    const clientSide = { ask_user: tool({ inputSchema: transferInput }) };
    expect(() => gateTools(clientSide, { backend, sessionId: 's' })).toThrow(/cannot hold back 'ask_user'/);
    expect(() => gateTools({}, { backend })).toThrow(/needs the session/);
  });

  it('streamText: an allowed call runs once; session() reads the app context', async () => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'stream-1');
    const gated = gatedTransfer({
      backend: world.backend,
      session: ({ experimental_context }) => (experimental_context as { chatId: string }).chatId,
    });
    const stream = streamText({
      model: scriptedModel({ amount: 30 }).model,
      tools: gated.tools,
      messages: USER,
      stopWhen: stepCountIs(3),
      experimental_context: { chatId: 'stream-1' },
    });
    expect(await stream.text).toBe('done');
    expect(gated.calls).toEqual([{ amount: 30, to: DEFAULT_RECIPIENT }]);
    expect(await decisionsOf(world, 'stream-1')).toHaveLength(1);
    await world.close();
  });
});
