/**
 * `gatehouse/client`: a typed client for the `/v1` HTTP API (undici). Its methods mirror the
 * core's, and its failures are the core's `GatehouseError` codes.
 */
export type { GatehouseClientOptions } from './clientOptions.js';
export {
  type ConflictQuery,
  createGatehouseClient,
  type DeliveryQuery,
  type GatehouseClient,
  type WriteOptions,
} from './gatehouseClient.js';
