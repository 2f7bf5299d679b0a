/**
 * The file `gatehouse export` writes and `gatehouse import` reads: one JSON line per row
 * (`{"table":…,"row":{…}}`, as the store's `dumpRows` yields them), then one end record,
 * `{"end":{"rows":N}}`. The end record is how `import` tells a whole dump from one cut short at
 * a line boundary, which would otherwise load as a smaller, valid-looking database.
 */
import type { DumpRecord } from '../../src/index.js';
import { GatehouseError } from '../../src/index.js';

/** The last line of a dump: how many row records come before it. */
export function endRecordLine(rows: number): string {
  return `${JSON.stringify({ end: { rows } })}\n`;
}

/** What {@link readDumpRecords} needs besides the lines. */
export interface ReadDumpOptions {
  /** The file's name, for messages (`file:N: …`). */
  file: string;
  /**
   * Whether a checkpoint public key is configured. Without one, a dump holding a pruned history
   * (a tenant whose events start after seq 1) is refused as soon as that is seen, before anything
   * is committed: once loaded it could not be verified, and a rerun with the key would find the
   * database no longer empty.
   */
  canVerifyCheckpoints: boolean;
  /**
   * Accept lines that end without an end record (a dump written by a gatehouse export older
   * than end records); one that is there is still checked.
   * @default false
   */
  allowMissingEnd?: boolean;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The row records of a dump's lines. Throws, ending the load (whose transaction then rolls back),
 * on a line that is not a record, a row after the end record, or when the lines end without an
 * end record or with one whose count differs.
 * @throws {GatehouseError} `invalid_request`, naming the file and line
 */
export async function* readDumpRecords(
  lines: AsyncIterable<string>,
  options: ReadDumpOptions,
): AsyncGenerator<DumpRecord> {
  const { file } = options;
  const refuse = (n: number, message: string) =>
    new GatehouseError('invalid_request', `${file}:${n}: ${message}`);
  const historyStarts = new Set<string>();
  let n = 0;
  let rows = 0;
  let end: { line: number; rows: unknown } | undefined;
  for await (const line of lines) {
    n += 1;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw refuse(n, 'not a JSON line written by gatehouse export.');
    }
    if (end !== undefined) throw refuse(n, `a line after the end record (line ${end.line}).`);
    if (isObject(value) && isObject(value['end'])) {
      end = { line: n, rows: value['end']['rows'] };
      continue;
    }
    if (!isObject(value) || typeof value['table'] !== 'string' || !isObject(value['row'])) {
      throw refuse(n, 'not a record written by gatehouse export.');
    }
    const record = value as unknown as DumpRecord;
    if (!options.canVerifyCheckpoints && record.table === 'events') {
      const tenant = String(record.row['tenant_id']);
      if (!historyStarts.has(tenant)) {
        historyStarts.add(tenant);
        if (Number(record.row['seq']) > 1) {
          throw refuse(
            n,
            `tenant ${tenant}'s history is pruned: it is verified from its signed checkpoint, and there is no checkpoint public key. Nothing was imported: rerun with --public-key (or GATEHOUSE_CHECKPOINT_PUBLIC_KEY).`,
          );
        }
      }
    }
    rows += 1;
    yield record;
  }
  if (end === undefined) {
    if (options.allowMissingEnd) return;
    throw new GatehouseError(
      'invalid_request',
      `${file}: the file ends before its end record: cut short, or written by an older gatehouse export. Nothing was imported (a dump of an older version that is whole: rerun with --no-end-record).`,
    );
  }
  if (end.rows !== rows) {
    throw refuse(
      end.line,
      `the end record counts ${String(end.rows)} rows but the file holds ${rows}: not a whole dump. Nothing was imported.`,
    );
  }
}
