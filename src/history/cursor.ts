/**
 * Opaque history cursors. A cursor names the last `seq` a page returned and the order it was read
 * in, so the next page is one indexed range scan whatever the size of the log.
 */
import { GatehouseError } from '../errors.js';

/** What a cursor carries. */
export interface CursorPosition {
  seq: number;
  order: 'asc' | 'desc';
}

/** Encodes a position as an opaque URL-safe string. */
export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(`v1:${position.order}:${position.seq}`).toString('base64url');
}

/**
 * Decodes a cursor made by {@link encodeCursor}.
 * @throws {GatehouseError} `invalid_request` for anything else, or for a cursor of another order
 */
export function decodeCursor(cursor: string, order: 'asc' | 'desc'): CursorPosition {
  const invalid = (why: string) =>
    new GatehouseError('invalid_request', `Invalid cursor: ${why}.`, {
      errors: [{ path: 'cursor', message: why }],
    });
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^v1:(asc|desc):(\d{1,15})$/.exec(text);
  if (!match) throw invalid('not a cursor returned by this API');
  if (match[1] !== order) throw invalid(`the cursor was made for order=${match[1]}`);
  return { order, seq: Number(match[2]) };
}
