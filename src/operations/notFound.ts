/**
 * The `not_found` answers of the operations, one wording for every kind of object.
 */
import { GatehouseError } from '../errors.js';
import { isPlausibleId } from '../schemas.js';

/** The `not_found` error for `what` ("Webhook 'whk_…'"). */
export function notFound(what: string): GatehouseError {
  return new GatehouseError('not_found', `${what} was not found.`);
}

/**
 * Throws `not_found` for an ID no object can have (control characters, NUL, very long) before it
 * reaches a database that would fail on it rather than find nothing (PostgreSQL refuses U+0000).
 */
export function assertPlausibleId(id: string, what: string): void {
  if (!isPlausibleId(id)) throw notFound(`${what} '${id}'`);
}
