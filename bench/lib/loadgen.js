// autocannon against a URL, with our own latency record (autocannon's histogram keeps whole
// milliseconds; the 'response' event carries the exact time).

import autocannon from 'autocannon';
import { summarize } from './measure.js';

/**
 * Runs autocannon for `seconds` with `connections`, cycling through `requests`
 * (`[{ method, path, headers, body }]`). Returns a summary (ops/s of 2xx answers, p50/p99 µs)
 * plus the count of non-2xx answers and errors.
 */
export function cannon({ url, connections, seconds, requests, headers = {} }) {
  return new Promise((resolve, reject) => {
    const latencies = [];
    const started = performance.now();
    let non2xx = 0;
    const instance = autocannon(
      { url, connections, duration: seconds, requests, headers, timeout: 30 },
      (err, result) => {
        if (err) return reject(err);
        const elapsedMs = performance.now() - started;
        resolve({
          ...summarize(latencies, elapsedMs),
          non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs * 1000);
      else non2xx += 1;
    });
  });
}

/** Runs `variants` (`{ name: () => Promise<summary> }`) in interleaved rounds and merges each one's rounds. */
export async function interleaveRounds(variants, rounds) {
  const acc = Object.fromEntries(Object.keys(variants).map((n) => [n, []]));
  for (let r = 0; r < rounds; r += 1) {
    for (const [n, fn] of Object.entries(variants)) acc[n].push(await fn(r));
  }
  return Object.fromEntries(
    Object.entries(acc).map(([n, list]) => {
      const ops = list.reduce((a, s) => a + s.ops, 0);
      const seconds = list.reduce((a, s) => a + s.ops / s.ops_per_s, 0);
      return [
        n,
        {
          ops,
          ops_per_s: ops / seconds,
          // Percentiles of rounds are not additive: report the median round's.
          p50_us: median(list.map((s) => s.p50_us)),
          p99_us: median(list.map((s) => s.p99_us)),
          non2xx: list.reduce((a, s) => a + (s.non2xx ?? 0), 0),
          errors: list.reduce((a, s) => a + (s.errors ?? 0), 0),
        },
      ];
    }),
  );
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
