// Starts bench/servers/server.js in a child process and stops it; reads its resident memory.

import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR } from './env.js';

/** Forks a benchmark server; resolves with `{ url, key, pid, rssBytes(), stop() }` once it listens. */
export function startServer(options, { startTimeoutMs = 120_000 } = {}) {
  const child = fork(join(BENCH_DIR, 'servers', 'server.js'), [JSON.stringify(options)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: process.env,
    // GATEHOUSE_BENCH_SERVER_PROF=<dir>: CPU profiles of the servers, for `node --cpu-prof` work.
    execArgv: process.env.GATEHOUSE_BENCH_SERVER_PROF
      ? [
          '--cpu-prof',
          '--cpu-prof-interval',
          '200',
          '--cpu-prof-dir',
          process.env.GATEHOUSE_BENCH_SERVER_PROF,
        ]
      : [],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`benchmark server (${options.mode}) did not start in ${startTimeoutMs} ms`));
    }, startTimeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`benchmark server (${options.mode}) exited with ${code} before it was ready`));
    });
    child.once('message', (m) => {
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const exited = new Promise((r) => child.once('exit', r));
      resolve({
        url: m.url,
        key: m.key,
        pid: m.pid,
        rssBytes: (field) => rssOf(m.pid, field),
        /** Asks the server for its report (the receiver's arrivals). */
        report() {
          return new Promise((res) => {
            const onMessage = (msg) => {
              if (msg && 'report' in msg) {
                child.off('message', onMessage);
                res(msg.report);
              }
            };
            child.on('message', onMessage);
            child.send('report');
          });
        },
        async stop() {
          if (child.exitCode !== null) return;
          child.send('stop');
          const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(killer);
        },
      });
    });
  });
}

/**
 * Resident set size of a process in bytes (Linux /proc), or NaN. `field` `RssAnon` is the part
 * that is the process's own memory (heap, stacks), without mapped files and shared memory.
 */
export function rssOf(pid, field = 'VmRSS') {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
