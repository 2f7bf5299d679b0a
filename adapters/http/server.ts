/**
 * Puts the app on a Node HTTP server, with timeouts that cut off slow clients. An app from
 * `createHttpApp` (or its `fetch`) is served by its lean node:http listener; any other web
 * `fetch` handler through @hono/node-server's converter.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { type HttpApp, nodeListenerOf } from './app.js';

/** A running server. */
export interface RunningServer {
  /** `http://host:port`. */
  url: string;
  port: number;
  /** Stops accepting, waits for open requests up to `graceMs`, then closes sockets; safe twice. */
  close(graceMs?: number): Promise<void>;
}

/** Options for {@link startHttpServer}. */
export interface ServerOptions {
  /** @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 8787 */
  port?: number;
  /** Time allowed to send the request headers. @default 10 s */
  headersTimeoutMs?: number;
  /** Time allowed for a whole request. @default 30 s */
  requestTimeoutMs?: number;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

function listenerFor(target: HttpApp | ((request: Request) => Response | Promise<Response>)): Listener {
  if (typeof target !== 'function') return target.nodeListener;
  const lean = nodeListenerOf(target);
  if (lean) return lean;
  const web = getRequestListener(target);
  return (req, res) => void web(req, res);
}

/**
 * Starts serving an app (`createHttpApp(...)` or its `.fetch`), or any web `fetch` handler.
 * @throws the listen error (e.g. `EADDRINUSE`)
 */
export async function startHttpServer(
  app: HttpApp | ((request: Request) => Response | Promise<Response>),
  options: ServerOptions = {},
): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const http = createServer(
    {
      // Node checks both timeouts only this often (default 30 s), so a slow client would keep
      // its socket up to 30 s past them; check at a quarter of the shorter one, at most every 1 s.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.min(headersTimeout, requestTimeout) / 4)),
      headersTimeout,
      requestTimeout,
    },
    listenerFor(app),
  );
  await new Promise<void>((resolve, reject) => {
    http.once('listening', resolve);
    http.once('error', reject);
    http.listen(options.port ?? 8787, host);
  });
  const port = (http.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close(graceMs = 5000) {
      closing ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => http.closeAllConnections(), graceMs);
        timer.unref();
        http.close(() => {
          clearTimeout(timer);
          resolve();
        });
        http.closeIdleConnections();
      });
      return closing;
    },
  };
}
