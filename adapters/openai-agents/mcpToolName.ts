/**
 * The name an MCP tool has on its server, from the name OpenAI Agents published it under. The SDK
 * makes a function tool name of it (`transfer-money` → `transfer_money`) and, with the agent's
 * `mcpConfig: { includeServerInToolNames: true }`, prefixes the server (`mcp_bank__transfer_money`),
 * shortened with a hash past 64 characters or when two tools would share a name (agents-core
 * `mcp.ts`, `buildPrefixedToolNameOverrides`). A policy names the tool as its server does.
 */
import { createHash } from 'node:crypto';
import type { MCPServer } from '@openai/agents-core';
import { GatehouseError } from '../../src/index.js';

/** The longest name the SDK gives a prefixed MCP tool, and how many hex digits of hash shorten it. */
const MAX_PREFIXED_LENGTH = 64;
const HASH_LENGTH = 8;

/** What the SDK does to every function tool's name (agents-core `toFunctionToolName`). */
function functionToolName(name: string): string {
  return name.replace(/[^a-zA-Z0-9]/g, '_');
}

/** One part of a prefixed name (agents-core `getSafeToolNamePart`). */
function safePart(value: string, fallback: string): string {
  const safe = Array.from(value, (char) => (/^[A-Za-z0-9_-]$/.test(char) ? char : '_'))
    .join('')
    .replace(/^[_-]+|[_-]+$/g, '');
  return safe || fallback;
}

/** The names the SDK may publish `toolName` of `serverName` under. */
function publishedNames(serverName: string, toolName: string, prefixed: boolean): string[] {
  if (!prefixed) return [functionToolName(toolName)];
  const base = `mcp_${safePart(serverName, 'server')}__${safePart(toolName, 'tool')}`;
  const hash = createHash('sha1').update(`${serverName}\0${toolName}`).digest('hex');
  const suffix = `_${hash.slice(0, HASH_LENGTH)}`;
  const stem = base.slice(0, MAX_PREFIXED_LENGTH - suffix.length).replace(/[_-]+$/g, '') || 'mcp';
  const names = [`${stem}${suffix}`];
  if (base.length <= MAX_PREFIXED_LENGTH) names.push(base);
  return names.map(functionToolName);
}

/**
 * The name, on `server`, of the tool the model called as `calledName`: the one tool the server
 * lists that the SDK would publish under that name for `agent`.
 * @throws {GatehouseError} `invalid_request` when no tool or several match (a server named after
 * its URL, whose name the SDK redacts, or a name the SDK had to disambiguate twice)
 */
export async function mcpToolName(
  server: MCPServer,
  agent: { mcpConfig?: { includeServerInToolNames?: boolean } },
  calledName: string,
): Promise<string> {
  const prefixed = agent.mcpConfig?.includeServerInToolNames === true;
  const matches = (await server.listTools()).filter((tool) =>
    publishedNames(server.name, tool.name, prefixed).includes(calledName),
  );
  if (matches.length === 1) return matches[0]!.name;
  throw new GatehouseError(
    'invalid_request',
    `Gatehouse cannot tell which tool of MCP server '${server.name}' the model called as '${calledName}' ` +
      `(${matches.length === 0 ? 'none' : 'several'} of its tools match), so it does not run.`,
  );
}
