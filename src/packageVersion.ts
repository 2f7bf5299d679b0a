/**
 * Gatehouse's own version (MCP `serverInfo`, `gatehouse --version`): read from package.json at
 * run time, which works on every supported Node without a JSON import attribute.
 */
import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** The `version` of the gatehouse package.json, found from the sources and from `dist/`; `0.0.0` if neither. */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  cached = '0.0.0';
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === 'gatehouse' && typeof pkg.version === 'string') {
        cached = pkg.version;
        break;
      }
    } catch {
      // Not at this depth: try the next one.
    }
  }
  return cached;
}
