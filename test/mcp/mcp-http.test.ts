/**
 * The engine's `mcp` option against a real MCP server (@modelcontextprotocol/sdk's McpServer
 * behind Streamable HTTP on 127.0.0.1, one for the file): a call completes, a destructive tool
 * waits for approval and runs once, an `isError` result is an error part, a server down at a
 * step is an error the model sees, a server killed mid-call makes a non-idempotent call's
 * outcome unknown and re-runs an idempotent one after the reconnect, a tool the server dropped
 * is named.
 */
import { createHarness, type Harness } from '../support/harness'
import type { ToolPart } from '../../src'
import { endDespiteDoubt } from './in-doubt'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startHttp, newState } = require('../fixtures/mcp/mcp-test-server.cjs')

type McpTestServer = {
  state: { calls: Array<{ tool: string; args: unknown }>; removed: Set<string>; hold: boolean; onCall: (call: { tool: string }) => void; headers: Array<Record<string, string>> }
  url: string
  kill(): Promise<void>
  restart(): Promise<void>
  release(): void
  close(): Promise<void>
}

let mcp: McpTestServer
let h: Harness
beforeAll(async () => {
  mcp = await startHttp(newState())
  h = await createHarness({
    mcp: { servers: { site: { transport: { type: 'http', url: mcp.url }, trust: true, reconnect: { attempts: 3, initialDelayMs: 20, maxDelayMs: 50 } } } },
    toolExecution: { timeoutMs: 5_000 },
  })
})
afterAll(async () => {
  await h?.close()
  await mcp?.close()
})
beforeEach(() => {
  mcp.state.calls.length = 0
  mcp.state.removed.clear()
  mcp.state.hold = false
  mcp.state.onCall = () => undefined
})

const callsOf = (tool: string) => mcp.state.calls.filter((c) => c.tool === tool).length
async function toolPart(sessionId: string): Promise<ToolPart> {
  const parts = (await h.engine.messages(sessionId)).flatMap((m) => m.parts)
  return parts.find((p): p is ToolPart => p.type === 'tool')!
}
/** Approves every call of `turnId` that asks (tools without annotations need approval). */
function approveAll(turnId: string): Promise<void> {
  return new Promise((resolve) => {
    const off = h.engine.subscribe((e) => {
      if (e.type === 'approval.requested' && e.turnId === turnId) for (const call of e.calls) void h.engine.approve(turnId, call.callId)
      if (e.type === 'turn.transition' && e.turnId === turnId && e.to === 'tool-running') {
        off()
        resolve()
      }
    })
  })
}
const callStarted = (tool: string) => new Promise<void>((resolve) => (mcp.state.onCall = (call) => call.tool === tool && resolve()))

test('the tools are listed at createEngine; a read-only tool of a trusted server runs without approval and the turn completes', async () => {
  expect(Object.keys(h.engine.config.tools).sort()).toEqual(['broken', 'deploy', 'echo_auth', 'lookup', 'plain', 'slow_copy', 'slow_read', 'slow_write'])
  const session = await h.engine.createSession()
  h.server.tool('lookup', { q: 'turnchart' }, { id: 'call_1' })
  h.server.text('Found it.')
  const done = await h.engine.prompt(session.id, 'look it up').done
  expect(done.outcome).toBe('completed')
  expect(await toolPart(session.id)).toMatchObject({ tool: 'lookup', state: { status: 'completed', output: { content: [{ type: 'text', text: 'found turnchart' }] } } })
  // toModelOutput (MCP content → the model's tool result): the model read the text.
  expect(JSON.stringify(h.server.requests.at(-1)?.body)).toContain('found turnchart')
})

test('a destructive tool waits for approval and runs once after it; a tool without annotations needs approval too', async () => {
  expect(h.engine.config.tools.deploy.needsApproval).toBe(true)
  expect(h.engine.config.tools.plain.needsApproval).toBe(true)
  expect(h.engine.config.tools.lookup.needsApproval).toBe(false)
  const session = await h.engine.createSession()
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  h.server.text('Deployed.')
  const turn = h.engine.prompt(session.id, 'deploy')
  await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  expect(callsOf('deploy')).toBe(0)
  await h.engine.approve(turn.id, 'call_deploy')
  expect((await turn.done).outcome).toBe('completed')
  expect(callsOf('deploy')).toBe(1)
  expect(await toolPart(session.id)).toMatchObject({ state: { status: 'completed' } })
})

test('an isError result is an error part with the server text, which the model sees', async () => {
  const session = await h.engine.createSession()
  h.server.tool('broken', {}, { id: 'call_b' })
  h.server.text('It failed.')
  const turn = h.engine.prompt(session.id, 'try')
  await approveAll(turn.id)
  expect((await turn.done).outcome).toBe('completed')
  expect(await toolPart(session.id)).toMatchObject({ state: { status: 'error', error: 'disk full' } })
  expect(JSON.stringify(h.server.requests.at(-1)?.body)).toContain('disk full')
})

test('the server killed mid-call: a non-idempotent call is not re-sent (outcome unknown); an idempotent one runs again after the reconnect', async () => {
  // non-idempotent
  let session = await h.engine.createSession()
  mcp.state.hold = true
  h.server.tool('slow_write', { key: 'a' }, { id: 'call_w' })
  h.server.text('Noted.')
  let started = callStarted('slow_write')
  const doubt = endDespiteDoubt(h.engine, session.id)
  const write = h.engine.prompt(session.id, 'write')
  await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === write.id)
  await h.engine.approve(write.id, 'call_w')
  await started
  await mcp.kill()
  await mcp.restart()
  const how = await doubt.ended(write)
  expect(callsOf('slow_write')).toBe(1)
  const part = await toolPart(session.id)
  expect(how).toBe('in-doubt') // the turn waited; the test settled it with resolveCall({ error })
  expect(part.state).toMatchObject({ status: 'error', error: expect.stringContaining('settled by the test') })

  // idempotent (read-only on a trusted server): re-sent once the server is back
  session = await h.engine.createSession()
  mcp.state.calls.length = 0
  mcp.state.hold = true
  h.server.tool('slow_read', { key: 'b' }, { id: 'call_r' })
  h.server.text('Read.')
  started = callStarted('slow_read')
  const read = h.engine.prompt(session.id, 'read')
  await started
  mcp.state.hold = false
  await mcp.kill()
  await mcp.restart()
  expect((await read.done).outcome).toBe('completed')
  expect(callsOf('slow_read')).toBe(2)
  expect(await toolPart(session.id)).toMatchObject({ state: { status: 'completed', output: { content: [{ text: 'read b' }] } } })
})

test('a server down at a step: the call is an error the model sees, the turn completes; back up, the next call reconnects', async () => {
  const session = await h.engine.createSession()
  await mcp.kill()
  h.server.tool('lookup', { q: 'x' }, { id: 'call_down' })
  h.server.text('The server is down.')
  try {
    expect((await h.engine.prompt(session.id, 'look').done).outcome).toBe('completed')
  } finally {
    await mcp.restart()
  }
  expect(await toolPart(session.id)).toMatchObject({ state: { status: 'error', error: expect.stringMatching(/MCP server 'site' is unavailable after 3 connection attempts/) } })
  h.server.tool('lookup', { q: 'y' }, { id: 'call_up' })
  h.server.text('Back.')
  const again = await h.engine.createSession()
  expect((await h.engine.prompt(again.id, 'look').done).outcome).toBe('completed')
  expect(await toolPart(again.id)).toMatchObject({ state: { status: 'completed' } })
})

test('a tool the server no longer lists after a reconnect: the call is an error naming it, not sent', async () => {
  // drop the connection, then the server comes back without `lookup`
  await mcp.kill()
  mcp.state.removed.add('lookup')
  await mcp.restart()
  const session = await h.engine.createSession()
  h.server.tool('lookup', { q: 'x' }, { id: 'call_gone' })
  h.server.text('Gone.')
  expect((await h.engine.prompt(session.id, 'look').done).outcome).toBe('completed')
  const parts = (await h.engine.messages(session.id)).flatMap((m) => m.parts).filter((p): p is ToolPart => p.type === 'tool')
  expect(parts.find((p) => p.tool === 'lookup')).toMatchObject({ state: { status: 'error', error: expect.stringMatching(/tool 'lookup' is no longer available \(removed\).*MCP server 'site'/) } })
  expect(callsOf('lookup')).toBe(0)
})
