/**
 * What `gatehouse` prints when a command fails, and how it stops when its reader goes away.
 */
import { isGatehouseError } from '../../src/index.js';

/**
 * The text after `gatehouse: ` for anything thrown: the message, then the field problems it does
 * not name already, so each problem is printed once.
 */
export function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (!isGatehouseError(error) || error.errors.length < 2) return error.message;
  // An invalid policy's message lists every problem with its line; a request's names the first.
  const unnamed = error.errors.filter((e) => !error.message.includes(e.path));
  return [error.message, ...unnamed.map((e) => `  - ${e.path}: ${e.message}`)].join('\n');
}

/** True for a write to a pipe whose reader has gone (`gatehouse export | head`). */
export function isClosedPipe(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'EPIPE';
}

/**
 * The exit status once stdout's reader has gone: 128 + SIGPIPE, as a shell reports a tool the
 * signal stopped, so `set -o pipefail` still notices a cut-short `gatehouse export | gzip`.
 */
export const CLOSED_PIPE_STATUS = 141;

/** A stdout `error` listener: exits with {@link CLOSED_PIPE_STATUS} once the reader has gone. */
export function stopWhenReaderGoes(error: Error): void {
  if (isClosedPipe(error)) process.exit(CLOSED_PIPE_STATUS);
  throw error;
}
