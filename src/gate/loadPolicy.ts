/** Reading a policy file from disk. */
import { readFile } from 'node:fs/promises';
import { GatehouseError } from '../errors.js';
import { compilePolicy } from './compilePolicy.js';
import type { CompiledPolicy } from './gateTypes.js';

/**
 * Reads and compiles a policy file; error positions are prefixed with `path`.
 * @throws GatehouseError `invalid_request`: `Cannot read policy file <path>: <reason>` when the
 *   file cannot be read, or the problems {@link compilePolicy} reports.
 * @example
 * const policy = await loadPolicyFile('./gatehouse.policy.yaml');
 */
export async function loadPolicyFile(path: string): Promise<CompiledPolicy> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    const message = `Cannot read policy file ${path}: ${describeReadError(reason)}`;
    throw new GatehouseError('invalid_request', message, {
      cause: error,
      errors: [{ path: 'policy', message }],
    });
  }
  return compilePolicy(text, { source: path });
}

function describeReadError(code: string): string {
  switch (code) {
    case 'ENOENT':
      return 'no such file (ENOENT)';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code})`;
    case 'EISDIR':
      return 'it is a directory (EISDIR)';
    default:
      return code;
  }
}
