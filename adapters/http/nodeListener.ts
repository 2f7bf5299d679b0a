/**
 * The node:http face of the pipeline: plain Node request and response objects in and out, no web
 * `Request`, `Headers` or streams (building those cost ~500 µs of CPU per POST with a body in
 * @hono/node-server). Only `/mcp`, whose SDK transport works on a web `Request`, is handed to
 * @hono/node-server's converter and the web face.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Pipeline } from './pipeline.js';
import { pathAndSearch, readNodeBody } from './requestParts.js';

/** The Node request and response behind a web `Request` the node face converted. */
export interface NodeExchange {
  req: IncomingMessage;
  res: ServerResponse;
}

/** A signal that aborts when `res` closes before it finished: the client went away. */
export function abortedOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.closed) {
    if (!res.writableFinished) controller.abort();
  } else {
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
  }
  return controller.signal;
}

/**
 * A node:http request listener over `pipeline`; `fetch` (the web face) serves web-only routes,
 * given the Node request and response too, so that it can read the body without web streams and
 * watch the socket of a long answer.
 */
export function createNodeListener(
  pipeline: Pipeline,
  fetch: (request: Request, node?: NodeExchange) => Promise<Response>,
): (req: IncomingMessage, res: ServerResponse) => void {
  // This listener is only ever given node:http (HTTP/1) requests, but the type admits HTTP/2.
  const webListener = getRequestListener((request, env) =>
    fetch(
      request,
      env.incoming instanceof IncomingMessage && env.outgoing instanceof ServerResponse
        ? { req: env.incoming, res: env.outgoing }
        : undefined,
    ),
  );
  return (req, res) => {
    const { path, search } = pathAndSearch(req.url ?? '/');
    if (pipeline.isWebPath(path)) {
      void webListener(req, res);
      return;
    }
    let signal: AbortSignal | undefined;
    pipeline
      .handle({
        method: req.method ?? 'GET',
        path,
        search,
        header: (name) => {
          const value = req.headers[name];
          return Array.isArray(value) ? value.join(', ') : value;
        },
        text: (limit) => readNodeBody(req, limit),
        // Built on first read only: most requests never need one.
        get signal() {
          signal ??= abortedOnClose(res);
          return signal;
        },
      })
      .then((reply) => {
        if (reply instanceof Response) throw new Error('a web route answered on the node face');
        // With its length, as the web face sends its answers (Node would otherwise send a body
        // given after the headers chunked).
        res.writeHead(
          reply.status,
          reply.body === null
            ? reply.headers
            : { ...reply.headers, 'content-length': String(Buffer.byteLength(reply.body)) },
        );
        res.end(reply.body ?? undefined);
      })
      .catch(() => {
        // The pipeline turns every failure into a problem answer; only writing can fail here
        // (the client went away, a header value Node refuses).
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/problem+json' });
          res.end();
        } else res.destroy();
      });
  };
}
