/**
 * The outcome reports of one face: what happened after a gated tool ran, recorded under the
 * decision that let it run, written while the agent goes on.
 */
import { collectSecrets, maskSecrets, type OutcomeInput } from '../../src/index.js';
import type { GateBackend } from './gateBackend.js';

/** Where a face reports a failure of its own work (never the agent's). */
export type GateErrorContext =
  | { stage: 'record_outcome'; decisionId: string }
  | { stage: 'evaluate'; action: string; toolCallId?: string | undefined };

/** What {@link OutcomeReports} needs: the backend, and the options every face shares. */
export interface OutcomeReportOptions {
  backend: Pick<GateBackend, 'recordOutcome'>;
  /**
   * Record each gated call's result as an `action_outcome` event (`succeeded` / `failed`).
   * @default true
   */
  recordOutcomes?: boolean | undefined;
  /** Called when recording an outcome fails. Such failures never reach the agent. @default ignore */
  onError?: ((error: unknown, context: { decisionId: string; stage: 'record_outcome' }) => void) | undefined;
}

/** Longest `detail` sent with a failed outcome; the point is a hint, not a log. */
const DETAIL_CHARS = 200;

/**
 * The secrets among a call's arguments (by their names or shapes, as the history masks them in
 * `params`): a tool's error often quotes its input, and its outcome must not carry them in plain.
 */
export function secretsOf(...params: unknown[]): ReadonlySet<string> {
  const secrets = new Set<string>();
  for (const p of params) collectSecrets(p, 'params', secrets);
  return secrets;
}

/**
 * The first characters of an error's message (or of a text), for an outcome's `detail`, with
 * `secrets` masked first (so none is cut in half and shown in part).
 */
export function shortDetail(error: unknown, secrets: ReadonlySet<string> = new Set()): string {
  const raw =
    error instanceof Error
      ? `${error.name}: ${error.message}`
      : typeof error === 'string'
        ? error
        : (JSON.stringify(error) ?? String(error));
  const text = secrets.size === 0 ? raw : String(maskSecrets(raw, 'detail', secrets));
  return text.length > DETAIL_CHARS ? `${text.slice(0, DETAIL_CHARS - 1)}…` : text;
}

/**
 * Each report is started when its tool returns and written while the agent goes on: a gated call
 * waits for one Gatehouse call (the decision), not two. A report that fails goes to `onError`;
 * {@link flush} waits for the reports still being written (before reading the history, or before
 * exiting — on a serverless platform, hand `flush()` to its `waitUntil`).
 */
export class OutcomeReports {
  readonly #options: OutcomeReportOptions;
  readonly #pending = new Set<Promise<void>>();

  constructor(options: OutcomeReportOptions) {
    this.#options = options;
  }

  /** Starts recording `succeeded`. */
  succeeded(decisionId: string): void {
    this.record(decisionId, () => ({ outcome: 'succeeded' }));
  }

  /**
   * Starts recording `failed` with the first words of `cause` (an error, or the tool's error
   * text), the call's `secrets` masked (see {@link secretsOf}).
   */
  failed(decisionId: string, cause: unknown, secrets?: ReadonlySet<string>): void {
    this.record(decisionId, () => ({ outcome: 'failed', detail: shortDetail(cause, secrets) }));
  }

  /**
   * Starts recording the outcome `outcomeOf` describes. It is called when the report is written,
   * where a throw (a result that cannot be described) goes to `onError` like a failed write.
   */
  record(decisionId: string, outcomeOf: () => OutcomeInput): void {
    if (this.#options.recordOutcomes === false) return;
    // Started on the next turn of the event loop: even the synchronous start of a write (input
    // checks, the transaction's set-up) would otherwise run before the tool's result is handed on.
    const report = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.#record(decisionId, outcomeOf),
    );
    this.#pending.add(report);
    void report.then(() => this.#pending.delete(report));
  }

  /** Resolves once every report started so far (and any started meanwhile) is written or reported to `onError`. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  /** Never rejects: nobody awaits it on the agent's side, so a failure can only go to `onError`. */
  async #record(decisionId: string, outcomeOf: () => OutcomeInput): Promise<void> {
    try {
      await this.#options.backend.recordOutcome(decisionId, outcomeOf());
    } catch (error) {
      try {
        this.#options.onError?.(error, { decisionId, stage: 'record_outcome' });
      } catch {
        // A failing error hook must not fail the agent either.
      }
    }
  }
}
