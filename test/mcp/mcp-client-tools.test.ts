/**
 * Way (a): the tools of `@ai-sdk/mcp`'s `createMCPClient(...).tools()` passed in `tools` as they
 * are, against a real MCP server (Streamable HTTP on 127.0.0.1, one for the file). They run as
 * any tool: their `toModelOutput` is what the model reads, an `isError` result is an error part,
 * approval through the AI SDK's `needsApproval`, the parallel limit, and the tool timeout ends a
 * call whose server stops answering.
 */
import { createMCPClient, type MCPClient } from '@ai-sdk/mcp'
import { configureTool, type ToolPart } from '../../src'
import { createHarness, type Harness } from '../support/harness'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startHttp, newState } = require('../fixtures/mcp/mcp-test-server.cjs')

let mcp: { state: { calls: Array<{ tool: string }>; hold: boolean }; url: string; release(): void; close(): Promise<void> }
let client: MCPClient
let h: Harness
beforeAll(async () => {
  mcp = await startHttp(newState())
  client = await createMCPClient({ transport: { type: 'http', url: mcp.url } })
  const tools = await client.tools()
  h = await createHarness({
    tools: {
      ...tools,
      deploy: { ...tools.deploy, needsApproval: true },
      slow_write: configureTool(tools.slow_write, { timeoutMs: 300 }),
    },
    toolExecution: { concurrency: 1 },
  })
})
afterAll(async () => {
  await h?.close()
  await client?.close()
  await mcp?.close()
})

async function toolParts(sessionId: string): Promise<ToolPart[]> {
  return (await h.engine.messages(sessionId)).flatMap((m) => m.parts).filter((p): p is ToolPart => p.type === 'tool')
}

test('calls complete, one at a time (concurrency 1), the model reads their toModelOutput; an isError result is an error part', async () => {
  const session = await h.engine.createSession()
  h.server.tools([
    { name: 'lookup', input: { q: 'one' }, id: 'call_1' },
    { name: 'broken', input: {}, id: 'call_2' },
  ])
  h.server.text('Done.')
  expect((await h.engine.prompt(session.id, 'go').done).outcome).toBe('completed')
  const [lookup, broken] = await toolParts(session.id)
  expect(lookup).toMatchObject({ state: { status: 'completed', output: { content: [{ text: 'found one' }] }, modelOutput: { type: 'content', value: [{ type: 'text', text: 'found one' }] } } })
  expect(broken).toMatchObject({ state: { status: 'error', error: 'disk full' } })
  expect(mcp.state.calls.map((c) => c.tool)).toEqual(['lookup', 'broken'])
  expect(JSON.stringify(h.server.requests.at(-1)?.body)).toContain('found one')
})

test('approval with needsApproval: the call waits and runs once after it', async () => {
  const session = await h.engine.createSession()
  mcp.state.calls.length = 0
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_d' })
  h.server.text('Deployed.')
  const turn = h.engine.prompt(session.id, 'deploy')
  await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  expect(mcp.state.calls).toHaveLength(0)
  await h.engine.approve(turn.id, 'call_d')
  expect((await turn.done).outcome).toBe('completed')
  expect(mcp.state.calls.map((c) => c.tool)).toEqual(['deploy'])
})

test('a server that stops answering mid-call: the call ends within the tool timeout', async () => {
  const session = await h.engine.createSession()
  mcp.state.hold = true
  h.server.tool('slow_write', { key: 'k' }, { id: 'call_s' })
  h.server.text('It timed out.')
  expect((await h.engine.prompt(session.id, 'write').done).outcome).toBe('completed')
  mcp.release()
  expect((await toolParts(session.id))[0]).toMatchObject({ state: { status: 'error', error: "tool 'slow_write' timed out after 300 ms" } })
})
