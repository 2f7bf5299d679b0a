/**
 * `gatehouse`: the core. Governed state, the gate, the hash-chained history and webhook
 * subscriptions, over any {@link Store}. Faces live in `gatehouse/http`, `gatehouse/mcp`,
 * `gatehouse/langchain`, `gatehouse/client` and `gatehouse/webhooks`; stores in
 * `gatehouse/sqlite` and `gatehouse/postgres`.
 */

export { IN_PROCESS_CALLER } from './approvals/approverCheck.js';
export {
  authenticateApiKey,
  type CreateApiKeyOptions,
  createApiKey,
  createFirstApiKey,
  DEFAULT_KEY_SOURCES,
  hashApiKey,
  hasScope,
  KEY_PREFIX,
  type Principal,
  requireScope,
} from './auth/apiKeys.js';
export {
  ASYMMETRIC_ALGORITHMS,
  type ClaimRule,
  type ConsoleSignIn,
  type IdentityConfig,
  IdentityConfigSchema,
  type IssuerConfig,
  parseIdentityConfig,
} from './auth/identityConfig.js';
export {
  type PrincipalRecord,
  PrincipalRecordSchema,
  principalAttributes,
  principalOf,
  principalOfKey,
  principalOfToken,
} from './auth/principalRecord.js';
export {
  createTokenAuthenticator,
  type TokenAuthenticator,
  type TokenAuthenticatorOptions,
  type TokenTarget,
} from './auth/tokenAuthenticator.js';
export {
  ERROR_CODES,
  type ErrorCode,
  type FieldError,
  GatehouseError,
  type GatehouseErrorOptions,
  isGatehouseError,
  toGatehouseError,
} from './errors.js';
export {
  type ApprovalHold,
  type CompiledPolicy,
  type ConflictView,
  combineVerdicts,
  compilePolicy,
  conflictViewOf,
  DEFAULT_POLICY_YAML,
  DEFAULT_TYPES,
  defaultPolicy,
  type GateInput,
  type GateReason,
  type GateResult,
  gateStateOf,
  KEY_SET_READ,
  loadPolicyFile,
  type PolicyRuleInfo,
  type StateView,
  stateViewOf,
} from './gate/index.js';
export { createGatehouse } from './gatehouse.js';
export type {
  CallContext,
  DecisionRecord,
  Gatehouse,
  GatehouseOptions,
  RetentionReport,
  RunRetentionOptions,
  WebhookUrlCheck,
} from './gatehouseTypes.js';
export {
  type Checkpoint,
  type CheckpointBody,
  type CheckpointSigner,
  checkpointKeyId,
  checkpointProblem,
  generateCheckpointKeyPair,
  loadCheckpointPublicKey,
  loadCheckpointSigner,
  parseCheckpoint,
  signCheckpoint,
} from './history/checkpoints.js';
export {
  CALLER_CONTENT,
  commitField,
  createSaltSource,
  type ErasedField,
  type EventValues,
  erasedMarker,
  eventValuesOf,
  HISTORY_FORMAT,
  isErased,
  openEventData,
  openEventDataJson,
  type SaltSource,
  type SealedData,
  type SealedField,
  type SealedFields,
  sealEventData,
} from './history/commitments.js';
export { type CursorPosition, decodeCursor, encodeCursor } from './history/cursor.js';
export { summarizeEvent } from './history/eventSummary.js';
export {
  type ChainAnchor,
  type ErasedPath,
  GENESIS_HASH,
  type HashedFields,
  hashEvent,
  hashEventFormat1,
  hashTenantEvent,
  type SealedEvent,
  verifyChain,
} from './history/hashChain.js';
export {
  type LegalHold,
  type LegalHoldList,
  LegalHoldListSchema,
  LegalHoldSchema,
  type PlaceHoldInput,
  PlaceHoldInputSchema,
} from './history/legalHoldSchemas.js';
export {
  CheckpointSchema,
  PRUNE_FLOOR_DAYS,
  type PruneInput,
  PruneInputSchema,
  type PruneReport,
  PruneReportSchema,
  type RetentionInput,
  RetentionInputSchema,
  type RetentionView,
  RetentionViewSchema,
} from './history/pruneSchemas.js';
export {
  type Activation,
  type ActivePolicies,
  createActivePolicies,
} from './lifecycle/activePolicies.js';
export { entityTagOf, revisionFromEntityTag } from './lifecycle/entityTag.js';
export * from './lifecycle/lifecycleSchemas.js';
export {
  type PolicyTestCase,
  type PolicyTestFile,
  parsePolicyTestFile,
} from './lifecycle/policyTestFile.js';
export {
  type PolicyTestCaseResult,
  type PolicyTestRun,
  runPolicyTests,
} from './lifecycle/policyTestRunner.js';
export {
  type ReplayDecisionsOptions,
  type ReplayedDecision,
  replayDecisions,
} from './lifecycle/replayDecisions.js';
export {
  REPLAY_SLICE_MS,
  REPLAY_SLICE_STEPS,
  REPLAY_TIME_BUDGET_MS,
  type ReplayPacerOptions,
} from './lifecycle/replayPacer.js';
export { compareOutcomes, type DecisionOutcome, firedRules } from './lifecycle/replayReport.js';
export {
  type RetentionSchedule,
  type RetentionScheduleOptions,
  startRetentionSchedule,
} from './lifecycle/retentionSchedule.js';
export { packageVersion } from './packageVersion.js';
export {
  type Clock,
  createIdGenerator,
  type IdGenerator,
  type IdPrefix,
  isoTime,
  type RandomBytes,
  systemClock,
  systemRandomBytes,
} from './runtime.js';
export * from './schemas.js';
export { canonicalKey, keyCategory } from './state/canonicalKey.js';
export { type Classification, classify, maskValue, type Sensitivity } from './state/classify.js';
export { decideWrite, type WriteOutcome, type WriteSide } from './state/conflictRules.js';
export { collectSecrets, maskSecrets } from './state/maskSecrets.js';
export { maxClaimableTrust } from './state/sourceTrust.js';
export type * from './store.js';
export { STORE_TABLE_KEYS, STORE_TABLES } from './store.js';
export {
  activeTraceparent,
  contextFromTraceparent,
  decisionsCounter,
  GEN_AI_ATTRIBUTES,
  httpDurationHistogram,
  type InSpanOptions,
  inSpan,
  markSpanFailed,
  SPAN_ATTRIBUTES,
  TELEMETRY_SCOPE,
  tracer,
  tracingActive,
} from './telemetry.js';
export { parseInput } from './validation.js';
export * from './webhooks/index.js';
