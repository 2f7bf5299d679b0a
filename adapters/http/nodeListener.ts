/**
 * The node:http face of the pipeline: plain Node request and response objects in and out, no web
 * `Request`, `Headers` or streams (building those cost ~500 µs of CPU per POST with a body in
 * @hono/node-server). Only `/mcp`, whose SDK transport works on a web `Request`, is handed to
 * @hono/node-server's converter and the web face.
 */
import { IncomingMessage, type ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Pipeline } from './pipeline.js';
import { pathAndSearch, readNodeBody } from './requestParts.js';

/**
 * A node:http request listener over `pipeline`; `fetch` (the web face) serves web-only routes,
 * given the Node request too so that it can read the body without web streams.
 */
export function createNodeListener(
  pipeline: Pipeline,
  fetch: (request: Request, node?: IncomingMessage) => Promise<Response>,
): (req: IncomingMessage, res: ServerResponse) => void {
  // This listener is only ever given node:http (HTTP/1) requests, but the type admits HTTP/2.
  const webListener = getRequestListener((request, env) =>
    fetch(request, env.incoming instanceof IncomingMessage ? env.incoming : undefined),
  );
  return (req, res) => {
    const { path, search } = pathAndSearch(req.url ?? '/');
    if (pipeline.isWebPath(path)) {
      void webListener(req, res);
      return;
    }
    // The response closes before it has finished only when the client went away (as
    // @hono/node-server aborts its Request's signal): long operations stop then.
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished)
        abort.abort(new DOMException('The client closed the connection.', 'AbortError'));
    });
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
        signal: abort.signal,
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
