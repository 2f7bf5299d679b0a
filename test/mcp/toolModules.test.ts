/**
 * The server registers exactly the declared tool modules: what `tools/list` shows is what each
 * module declares (name, title, annotations), in the list's order.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { createMcpServer, GATEHOUSE_TOOLS } from '../../adapters/mcp/index.js';
import { budgetGatehouse } from './fixtures.js';

it('tools/list shows each declared tool module as declared', async () => {
  const gh = budgetGatehouse();
  const server = createMcpServer({ gatehouse: gh });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'modules', version: '1.0.0' });
  await client.connect(clientSide);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => ({ name: t.name, title: t.title, annotations: t.annotations }))).toEqual(
      GATEHOUSE_TOOLS.map((t) => ({ name: t.name, title: t.title, annotations: t.annotations })),
    );
    for (const tool of tools) {
      expect(tool.description, tool.name).toBeTruthy();
      expect(tool.outputSchema?.type, tool.name).toBe('object');
    }
  } finally {
    await client.close();
    await server.close();
    await gh.store.close();
  }
});
