/** `gatehouse/http`: the `/v1` API as a web-standard handler, and a Node server for it. */
export { createHttpApp, type HttpApp, type HttpAppOptions } from './app.js';
export { createIdempotency, type Idempotency, type IdempotencyOptions } from './idempotency.js';
export { createMetrics, type Metrics } from './metrics.js';
export { buildOpenApiDocument } from './openapi.js';
export { bearerChallenge, type IdentityOptions, stepUpChallenge } from './pipeline.js';
export {
  PROBLEM_DESCRIPTIONS,
  type ProblemBody,
  ProblemSchema,
  problemBody,
  problemPage,
  problemResponse,
  problemType,
  type Reply,
  STATUS_BY_CODE,
} from './problem.js';
export {
  createProtectedResourceRoutes,
  protectedResourceMetadata,
  protectedResourceUrls,
} from './protectedResource.js';
export { createRateLimiter, type RateLimiter, type RateLimiterOptions } from './rateLimiter.js';
export { type ApiRoute, defineRoute, type HttpMethod, type RouteCall, type SuccessStatus } from './route.js';
export { API_ROUTES, type OperationId } from './routes.js';
export { type RunningServer, type ServerOptions, startHttpServer } from './server.js';
