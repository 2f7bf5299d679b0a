/**
 * Whether the AI SDK is replaying an approval: the app answered a `tool-approval-request` with a
 * `tool-approval-response` and called again. Both majors then ask the approval hook once more for
 * the same call (v7 `toolApproval`, v6 `needsApproval`) and run the tool unless it says `denied`
 * (v7) or `false` (v6), so the hook must know that this time "ask a person" would mean "run".
 */
import type { ModelMessageLike } from './aiSdkShapes.js';

interface PartLike {
  type?: unknown;
  approvalId?: unknown;
  toolCallId?: unknown;
}

function partsOf(message: ModelMessageLike, role: string): PartLike[] {
  return message.role === role && Array.isArray(message.content) ? (message.content as PartLike[]) : [];
}

/**
 * True when `messages` hold an approval request for `toolCallId` (in an assistant message) and a
 * response to it (in a tool message). The SDK replays only responses whose request it finds by ID,
 * and finds the call by the request's `toolCallId`, so a replayed call always matches; a model that
 * reused a call ID would match too, and its held call is then refused instead of asked for.
 */
export function isApprovalReplay(
  messages: readonly ModelMessageLike[] | undefined,
  toolCallId: string,
): boolean {
  if (!Array.isArray(messages)) return false;
  const requested = new Set<unknown>();
  for (const message of messages) {
    for (const part of partsOf(message, 'assistant')) {
      if (part?.type === 'tool-approval-request' && part.toolCallId === toolCallId)
        requested.add(part.approvalId);
    }
  }
  if (requested.size === 0) return false;
  return messages.some((message) =>
    partsOf(message, 'tool').some(
      (part) => part?.type === 'tool-approval-response' && requested.has(part.approvalId),
    ),
  );
}
