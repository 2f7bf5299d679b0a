/**
 * When to try a failed delivery again, and what a response means. Pure: randomness and the
 * current time are passed in.
 */
import { GatehouseError } from '../errors.js';

/**
 * Delay before each retry, in milliseconds: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (Svix's
 * schedule; about 27.5 h in all). Entry `n - 1` follows the `n`-th failed attempt; after the last
 * one the delivery is marked failed. Eight attempts in total.
 */
export const RETRY_DELAYS_MS = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
] as const;

/** Jitter applied to each delay: ±20 %. */
export const RETRY_JITTER = 0.2;

/** The longest `Retry-After` honoured, in seconds (24 h); longer values are capped. */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/** Options for {@link nextRetryDelay}. */
export interface RetryDelayOptions {
  /** A number in [0, 1), e.g. `Math.random` (injected so tests are deterministic). */
  random: () => number;
  /** The receiver's `Retry-After`, in seconds (see {@link parseRetryAfter}); a lower bound. */
  retryAfterSeconds?: number | undefined;
}

/**
 * Milliseconds to wait before the next attempt, or `null` when the schedule is exhausted and the
 * delivery becomes failed. The scheduled delay gets ±20 % jitter; a receiver's `Retry-After`
 * (capped at 24 h) raises it but never lowers it.
 * @param attemptsSoFar attempts made so far, all failed (1 after the first attempt failed)
 * @throws GatehouseError `invalid_request` if `attemptsSoFar` is not an integer ≥ 1.
 * @example
 * nextRetryDelay(1, { random: () => 0.5 })                          // 5000
 * nextRetryDelay(1, { random: () => 0.5, retryAfterSeconds: 60 })   // 60000
 * nextRetryDelay(8, { random: Math.random })                        // null
 */
export function nextRetryDelay(attemptsSoFar: number, options: RetryDelayOptions): number | null {
  if (!Number.isInteger(attemptsSoFar) || attemptsSoFar < 1) {
    const message = `attemptsSoFar must be an integer of at least 1, got ${attemptsSoFar}.`;
    throw new GatehouseError('invalid_request', message, { errors: [{ path: 'attemptsSoFar', message }] });
  }
  const base = RETRY_DELAYS_MS[attemptsSoFar - 1];
  if (base === undefined) return null;
  const r = options.random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0.5;
  const delay = Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * unit));
  const retryAfter = options.retryAfterSeconds;
  if (retryAfter === undefined || !(retryAfter > 0)) return delay;
  return Math.max(delay, Math.ceil(Math.min(retryAfter, MAX_RETRY_AFTER_SECONDS) * 1000));
}

/** What a delivery's HTTP status means. */
export type DeliveryOutcome = 'delivered' | 'disable' | 'retry';

/**
 * Maps a receiver's HTTP status to an outcome: any 2xx is `delivered`; 410 Gone means the
 * receiver asks to `disable` the endpoint; everything else (3xx included: redirects are not
 * followed) is `retry`.
 * @example
 * classifyDeliveryResponse(204) // 'delivered'
 * classifyDeliveryResponse(301) // 'retry'
 */
export function classifyDeliveryResponse(status: number): DeliveryOutcome {
  if (status >= 200 && status <= 299) return 'delivered';
  if (status === 410) return 'disable';
  return 'retry';
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * Parses a `Retry-After` header (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in any of the
 * three formats (IMF-fixdate, RFC 850, asctime). Returns whole seconds from `now` (0 for a date in
 * the past), or `undefined` when the header is absent or malformed.
 * @example
 * parseRetryAfter('120', new Date())                                   // 120
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT',
 *   new Date('2015-10-21T07:27:00Z'))                                  // 60
 */
export function parseRetryAfter(header: string | undefined, now: Date): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = parseHttpDate(text, now);
  if (at === undefined) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

function parseHttpDate(text: string, now: Date): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2], Number(m[1]), m[4], m[5], m[6]);
  m = RFC850_DATE.exec(text);
  if (m) {
    // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
    let year = 2000 + Number(m[3]);
    if (year > now.getUTCFullYear() + 50) year -= 100;
    return utc(year, m[2], Number(m[1]), m[4], m[5], m[6]);
  }
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1], Number((m[2] ?? '').trim()), m[3], m[4], m[5]);
  return undefined;
}

function utc(
  year: number,
  month: string | undefined,
  day: number,
  hours: string | undefined,
  minutes: string | undefined,
  seconds: string | undefined,
): number | undefined {
  const monthIndex = MONTHS.indexOf((month ?? '').toLowerCase());
  const h = Number(hours);
  const min = Number(minutes);
  const s = Number(seconds);
  if (monthIndex < 0 || day < 1 || day > 31 || h > 23 || min > 59 || s > 60) return undefined;
  const time = Date.UTC(year, monthIndex, day, h, min, Math.min(s, 59));
  // Date.UTC rolls 31 Feb over into March; a date that rolled over was not a real date.
  return new Date(time).getUTCDate() === day ? time : undefined;
}
