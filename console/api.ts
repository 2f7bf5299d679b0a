/**
 * The console's `/v1` client: the key from sessionStorage as a bearer header (no cookie, so no
 * CSRF), problem+json turned into {@link ApiError}, and the history stream read with fetch()
 * (EventSource cannot send an Authorization header).
 */

const KEY = 'gatehouse.apiKey';

/** One entry of a problem's `errors`: where (a field, or `line:col` of a policy) and what. */
export interface ProblemEntry {
  path: string;
  message: string;
}

/** A failed call: the problem's status, code, detail and, for 422, each problem found. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly errors: ProblemEntry[] = [],
  ) {
    super(detail);
  }
}

/** The stored key, if signed in. */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

/** Keeps the key for this tab only. */
export function storeKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

/** Forgets the key. */
export function forgetKey(): void {
  sessionStorage.removeItem(KEY);
}

let onUnauthorized: () => void = () => undefined;

/**
 * Sets what a 401 to the stored key does (the shell forgets the key and shows the sign-in), so
 * a key revoked while a page is open leads back to sign-in from every page, button and stream.
 */
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

/** The service root, from the console's own URL, so a path prefix in front of it still works. */
const ROOT = new URL('../', document.baseURI);

/** Query values; undefined and empty ones are left out. */
export type Query = Record<string, string | number | undefined>;

function url(path: string, query: Query = {}): string {
  const target = new URL(path.replace(/^\//, ''), ROOT);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') target.searchParams.set(name, String(value));
  }
  return target.toString();
}

async function problem(response: Response): Promise<ApiError> {
  let code = 'http_error';
  let detail = `${response.status} ${response.statusText}`;
  let errors: ProblemEntry[] = [];
  try {
    const body = (await response.json()) as { code?: string; detail?: string; errors?: unknown };
    code = body.code ?? code;
    detail = body.detail ?? detail;
    if (Array.isArray(body.errors)) errors = body.errors as ProblemEntry[];
  } catch {
    // Not problem+json (a proxy's page): the status line says enough.
  }
  return new ApiError(response.status, code, detail, errors);
}

/** Calls `/v1` with the stored key (or `key`). Resolves with the JSON answer (undefined for 204). */
export async function call<T>(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  options: {
    query?: Query;
    body?: unknown;
    key?: string;
    signal?: AbortSignal;
    /** Extra request headers (`if-match`). */
    headers?: Record<string, string>;
  } = {},
): Promise<T> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (key) headers['authorization'] = `Bearer ${key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const init: RequestInit = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (options.body !== undefined) init.body = JSON.stringify(options.body);
  if (options.signal) init.signal = options.signal;
  const response = await fetch(url(path, options.query), init);
  if (!response.ok) {
    const error = await problem(response);
    // A key typed in the sign-in form (`options.key`) is judged there, not here.
    if (response.status === 401 && options.key === undefined && key !== null) onUnauthorized();
    throw error;
  }
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** GET, with an optional query. */
export const get = <T>(path: string, query?: Query, signal?: AbortSignal) =>
  call<T>('GET', path, { ...(query ? { query } : {}), ...(signal ? { signal } : {}) });

/** POST a JSON body. */
export const post = <T>(path: string, body?: unknown) =>
  call<T>('POST', path, body === undefined ? {} : { body });

/** Path segment, escaped. */
export const seg = (value: string) => encodeURIComponent(value);

/**
 * Follows `GET /v1/history/stream`: calls `onEvent` with each event's parsed data, reconnecting
 * with `Last-Event-ID` after a drop, until `signal` aborts. `onState` reports live / retrying.
 */
export async function followStream(options: {
  query: Query;
  signal: AbortSignal;
  onEvent(data: unknown, id: string): void;
  onState(state: 'live' | 'retrying' | 'stopped', detail?: string): void;
}): Promise<void> {
  let lastId: string | undefined;
  let retryMs = 2000;
  while (!options.signal.aborted) {
    try {
      const headers: Record<string, string> = {
        accept: 'text/event-stream',
        authorization: `Bearer ${storedKey() ?? ''}`,
      };
      if (lastId !== undefined) headers['last-event-id'] = lastId;
      const response = await fetch(url('/v1/history/stream', options.query), {
        headers,
        cache: 'no-store',
        credentials: 'omit',
        signal: options.signal,
      });
      if (!response.ok || !response.body) {
        const error = await problem(response);
        if (response.status === 401) onUnauthorized();
        // Auth and input errors do not heal by retrying.
        if (response.status < 500 && response.status !== 429) {
          options.onState('stopped', error.message);
          return;
        }
        throw error;
      }
      options.onState('live');
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
          let id: string | undefined;
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('id:')) id = line.slice(3).trim();
            else if (line.startsWith('data:')) data += line.slice(5).trimStart();
            else if (line.startsWith('retry:')) retryMs = Number(line.slice(6)) || retryMs;
          }
          if (id !== undefined) lastId = id;
          if (data !== '') options.onEvent(JSON.parse(data), id ?? '');
        }
      }
    } catch (error) {
      if (options.signal.aborted) break;
      options.onState('retrying', (error as Error).message);
    }
    if (options.signal.aborted) break;
    options.onState('retrying', 'the stream ended');
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
  options.onState('stopped');
}
