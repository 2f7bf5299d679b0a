/**
 * The CEL environment of the gate: the types and variables every rule and message placeholder
 * is checked against when a policy loads.
 *
 * The library is @marcbachmann/cel-js, chosen by measurement over @bufbuild/cel
 * (`node bench/cel-choice.js`; figures in the README, Performance): both evaluate the gate's
 * expressions correctly, cel-js compiles and evaluates several times faster, and it type-checks
 * against declared variables and types (an unknown variable, a misspelt state field or
 * `action + 1` fails at load, with a source range), where @bufbuild/cel 0.6 exports no checker
 * and needs protobuf Timestamp messages for `now`.
 */
import { Environment, type Limits } from '@marcbachmann/cel-js';
import { CelConflict, CelStateItem } from './celActivation.js';
import { installCostMeter } from './celCostLimit.js';

const TIMESTAMP = 'google.protobuf.Timestamp';

/**
 * What the parser refuses, at load: a list literal of more than 1,000 elements (or a map literal
 * of more entries), and the like. cel-js's defaults, stated here because they are part of the
 * policy language: each literal element is work on every evaluation, within its budget.
 */
export const CEL_PARSER_LIMITS: Readonly<Limits> = {
  maxAstNodes: 100_000,
  maxDepth: 250,
  maxListElements: 1000,
  maxMapEntries: 1000,
  maxCallArguments: 32,
};

let sharedEnvironment: Environment | undefined;

/**
 * The CEL environment shared by every policy: built once, since building one is costly. It
 * declares what a rule can use: the `gatehouse.*` types, the variables and (with
 * `.registerFunction(signature, implementation)`) any function of the policy language beyond CEL's
 * standard ones; a declared function is type-checked at policy load like the rest. Every
 * evaluation through it is metered (see `installCostMeter`).
 */
export function celEnvironment(): Environment {
  if (sharedEnvironment) return sharedEnvironment;
  sharedEnvironment = new Environment({ limits: CEL_PARSER_LIMITS })
    .registerType('gatehouse.StateItem', {
      ctor: CelStateItem,
      fields: {
        value: 'string',
        // double, or null when the value is not a number: `dyn` admits both.
        number: 'dyn',
        type: 'string',
        source: 'string',
        trust: 'int',
        version: 'int',
        status: 'string',
        updated_at: TIMESTAMP,
      },
    })
    .registerType('gatehouse.Conflict', {
      ctor: CelConflict,
      fields: {
        conflict_id: 'string',
        key: 'string',
        current_value: 'string',
        proposed_value: 'string',
        proposed_source: 'string',
        created_at: TIMESTAMP,
      },
    })
    .registerVariable('action', 'string', { description: 'The action name' })
    .registerVariable('params', 'map<string, dyn>', { description: "The action's arguments" })
    .registerVariable('context', 'map<string, dyn>', { description: 'Caller-supplied context' })
    .registerVariable('state', 'map<string, gatehouse.StateItem>', { description: 'State by key' })
    .registerVariable('conflicts', 'list<gatehouse.Conflict>', { description: 'Unresolved conflicts' })
    .registerVariable('now', TIMESTAMP, { description: 'The evaluation time' });
  installCostMeter(sharedEnvironment);
  return sharedEnvironment;
}
