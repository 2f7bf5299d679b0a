/**
 * Pacing a long replay: it runs in slices that give the event loop back (so the service keeps
 * answering while a replay runs), within a total time budget, and stops when its caller goes
 * away.
 *
 * A replay is CPU work between store reads that a SQLite store answers synchronously, so without
 * slices a replay of 100,000 decisions (seconds; minutes with costly rules) held the event loop
 * from its first read to its report: `/healthz` waited 34 s behind one.
 */
import { setImmediate } from 'node:timers/promises';

/** A slice ends after the step during which this much time has passed… */
export const REPLAY_SLICE_MS = 10;
/** …or this many paced steps (decisions and session events), whichever comes first. */
export const REPLAY_SLICE_STEPS = 200;
/**
 * How long one replay call may run, in total: past it, the replay stops at the next event and
 * reports where to continue (`stopped_by: 'time_budget'`, `next_after_seq`).
 */
export const REPLAY_TIME_BUDGET_MS = 20_000;

/** What {@link ReplayPacer} needs. */
export interface ReplayPacerOptions {
  /** Aborts the replay: the next step rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** @default {@link REPLAY_TIME_BUDGET_MS} */
  timeBudgetMs?: number | undefined;
  /** A monotonic clock in milliseconds. @default performance.now */
  timer?: (() => number) | undefined;
}

/** Slices, budget and cancellation of one replay. */
export class ReplayPacer {
  readonly #signal: AbortSignal | undefined;
  readonly #timer: () => number;
  readonly #deadline: number;
  #sliceStart: number;
  #steps = 0;

  constructor(options: ReplayPacerOptions = {}) {
    this.#signal = options.signal;
    this.#timer = options.timer ?? (() => performance.now());
    this.#sliceStart = this.#timer();
    this.#deadline = this.#sliceStart + (options.timeBudgetMs ?? REPLAY_TIME_BUDGET_MS);
    this.#throwIfAborted();
  }

  /**
   * Called after each step: ends the slice when it is long enough (the event loop runs what is
   * waiting, then the replay goes on).
   * @throws the abort reason (an `AbortError` when it is not an Error) once the signal aborts
   */
  async step(): Promise<void> {
    this.#throwIfAborted();
    this.#steps += 1;
    if (this.#steps < REPLAY_SLICE_STEPS && this.#timer() - this.#sliceStart < REPLAY_SLICE_MS) return;
    await setImmediate();
    this.#throwIfAborted();
    this.#steps = 0;
    this.#sliceStart = this.#timer();
  }

  /** True once the time budget is spent. */
  get outOfTime(): boolean {
    return this.#timer() >= this.#deadline;
  }

  #throwIfAborted(): void {
    const signal = this.#signal;
    if (!signal?.aborted) return;
    const reason: unknown = signal.reason;
    throw reason instanceof Error
      ? reason
      : new DOMException(typeof reason === 'string' ? reason : 'The replay was aborted.', 'AbortError');
  }
}
