/**
 * What the pipeline reads from a request, from either face: the path and query of a URL, and the
 * body with its size limit (checked against Content-Length first, then while reading, so an
 * oversized body is never buffered whole).
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { GatehouseError } from '../../src/index.js';

function tooLarge(limit: number): GatehouseError {
  return new GatehouseError('payload_too_large', `The request body exceeds ${limit} bytes.`);
}

/** The body's chunks as text; bytes that are not UTF-8 are refused, never replaced. */
function utf8(chunks: readonly Uint8Array[]): string {
  const body = chunks.length === 1 && Buffer.isBuffer(chunks[0]) ? chunks[0] : Buffer.concat(chunks);
  if (!isUtf8(body)) throw new GatehouseError('malformed_request', 'The request body is not valid UTF-8.');
  return body.toString('utf8');
}

function declaredTooLarge(contentLength: string | null | undefined, limit: number): boolean {
  return contentLength !== null && contentLength !== undefined && Number(contentLength) > limit;
}

/** Splits a request target (`/a?b`, or an absolute URL) into its raw path and query string. */
export function pathAndSearch(target: string): { path: string; search: string } {
  // Without building a URL object: an absolute URL's path starts at the first `/` after `//`.
  const start = target.startsWith('/') ? 0 : target.indexOf('/', target.indexOf('//') + 2);
  if (start < 0) return { path: '/', search: '' };
  const hash = target.indexOf('#', start);
  const end = hash < 0 ? target.length : hash;
  const q = target.indexOf('?', start);
  return q < 0 || q > end
    ? { path: target.slice(start, end), search: '' }
    : { path: target.slice(start, q), search: target.slice(q + 1, end) };
}

/**
 * A query string as an object, each parameter once (a repeated one is refused rather than
 * silently read as its last value). No prototype, so `__proto__` is a parameter like any other,
 * which the route's strict schema then names as unknown.
 * @throws {GatehouseError} `invalid_request` when a parameter is repeated
 */
export function queryObject(search: string): Record<string, string> {
  const query: Record<string, string> = Object.create(null);
  if (search === '') return query;
  for (const [name, value] of new URLSearchParams(search)) {
    if (Object.hasOwn(query, name)) {
      throw new GatehouseError('invalid_request', `Query parameter '${name}' is given more than once.`, {
        errors: [{ path: name, message: 'is given more than once' }],
      });
    }
    query[name] = value;
  }
  return query;
}

/**
 * Reads a web Request's body as UTF-8.
 * @throws {GatehouseError} `payload_too_large` past `limit` bytes; `malformed_request` when the
 *   client stops sending before the end, or the body is not UTF-8
 */
export async function readWebBody(request: Request, limit: number): Promise<string> {
  if (declaredTooLarge(request.headers.get('content-length'), limit)) throw tooLarge(limit);
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: Awaited<ReturnType<typeof reader.read>>;
    try {
      read = await reader.read();
    } catch {
      // The stream errors when the client goes away mid-body: its mistake, no server failure.
      throw new GatehouseError('malformed_request', 'The request body ended early.');
    }
    const { done, value } = read;
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return utf8(chunks);
}

/**
 * Reads a node:http request's body as UTF-8, from the socket's own Buffers.
 * @throws {GatehouseError} `payload_too_large` past `limit` bytes; `malformed_request` when the
 *   client stops sending before the end, or the body is not UTF-8
 */
export function readNodeBody(req: IncomingMessage, limit: number): Promise<string> {
  if (declaredTooLarge(req.headers['content-length'], limit)) return Promise.reject(tooLarge(limit));
  // Most bodies are in before the request is authenticated: taken at once, without the stream's
  // listeners and the ticks it would take to emit them.
  if (req.complete && req.readableFlowing === null) return bufferedBody(req, limit);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    // Past the limit the rest is not kept; the 413 goes out with `Connection: close`.
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        done();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      try {
        resolve(utf8(chunks));
      } catch (error) {
        reject(error);
      }
    };
    const onError = () => onClose();
    const onClose = () => {
      done();
      reject(new GatehouseError('malformed_request', 'The request body ended early.'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** The body of a request the parser has wholly received, read off the stream's buffer. */
function bufferedBody(req: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
    size += chunk.length;
    if (size > limit) return Promise.reject(tooLarge(limit));
    chunks.push(chunk);
  }
  try {
    return Promise.resolve(utf8(chunks));
  } catch (error) {
    return Promise.reject(error);
  }
}
