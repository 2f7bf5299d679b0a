/**
 * A webhook receiver on loopback whose first request waits for the test to let it go: while it
 * waits, the sender's only slot is busy, and the test changes what the sender will send next.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as it arrived. */
export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver that answers `status` to every request, the first only once `release()` is called. */
export interface HeldReceiver {
  url: string;
  received: Received[];
  /** Resolves once the first request has arrived (and is being held). */
  firstArrived: Promise<void>;
  /** Answers the held first request, and every later one at once. */
  release(): void;
  close(): Promise<void>;
}

/** Starts a {@link HeldReceiver} on 127.0.0.1. */
export async function startHeldReceiver(status = 204): Promise<HeldReceiver> {
  const received: Received[] = [];
  let arrived!: () => void;
  const firstArrived = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  let released = false;
  let answerFirst: (() => void) | undefined;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const answer = () => res.writeHead(status).end();
      if (received.length > 1 || released) return answer();
      answerFirst = answer;
      arrived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    firstArrived,
    release() {
      released = true;
      const answer = answerFirst;
      answerFirst = undefined;
      answer?.();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
