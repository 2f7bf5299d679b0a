/**
 * Cutting off a client that stops reading a long answer (a history stream). Node buffers what a
 * response writes until the socket takes it; once the kernel's buffers are full, `write` returns
 * false and the writer waits for `drain`. A client that never reads again would hold its
 * connection, and the stream's place, for ever: this closes the connection instead once the
 * response has stayed full, with no `drain`, for a bounded time. A client that reads slowly but
 * steadily drains now and then and is left alone.
 */
import type { ServerResponse } from 'node:http';

/**
 * Destroys `res`'s connection once its write buffer has stayed full (`writableNeedDrain`, no
 * `drain` since) for at least `ms` — at most 1.5 × `ms`: it looks every `ms / 2`. Stops looking
 * when the response finishes or closes.
 */
export function dropWhenStalled(res: ServerResponse, ms: number): void {
  let full = false;
  let drained = false;
  let stalledLooks = 0;
  const onDrain = () => {
    drained = true;
  };
  const timer = setInterval(
    () => {
      // Full at the last look and no drain since: full for the whole interval.
      stalledLooks = full && !drained ? stalledLooks + 1 : 0;
      full = res.writableNeedDrain;
      drained = false;
      if (stalledLooks >= 2) res.destroy();
    },
    Math.max(1, ms / 2),
  );
  // A stalled client must not keep a closing process alive.
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    res.off('drain', onDrain);
  };
  res.on('drain', onDrain);
  res.once('close', stop);
  res.once('finish', stop);
}
