/**
 * An engine SIGKILLed while an MCP call runs (a real MCP server over Streamable HTTP in this
 * process holds the call): the next engine resumes the turn with the same rules as any tool's.
 * An idempotent call (read-only on a trusted server) is sent again and completes; a
 * non-idempotent one is not re-sent; one whose tool the server removed meanwhile is an error
 * naming it.
 */
import path from 'node:path'
import { forkChild } from '../support/child-process'
import { createEngine, type ToolPart } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { mcpServersFor } from './mcp-kill-options'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startHttp, newState } = require('../fixtures/mcp/mcp-test-server.cjs')

jest.setTimeout(60_000)

let server: ScriptedServer
let mcp: { state: { calls: Array<{ tool: string }>; hold: boolean; removed: Set<string>; onCall: (c: { tool: string }) => void }; url: string; release(): void; close(): Promise<void> }
beforeAll(async () => {
  server = await startScriptedServer()
  mcp = await startHttp(newState())
})
afterAll(async () => {
  await mcp?.close()
  await server?.close()
})

async function killMidCall(tool: string, input: unknown) {
  const dbPath = tempDbPath()
  mcp.state.calls.length = 0
  mcp.state.removed.clear()
  mcp.state.hold = true
  server.tool(tool, input, { id: 'call_mcp' })
  server.text('done after the restart')
  const arrived = new Promise<void>((resolve) => (mcp.state.onCall = (call) => call.tool === tool && resolve()))
  const child = forkChild(path.join(__dirname, 'mcp-kill-child.ts'), [dbPath, server.url, mcp.url])
  const { sessionId } = await child.waitFor((m) => m.type === 'session')
  await arrived
  child.process.kill('SIGKILL')
  await child.exited
  mcp.state.hold = false
  mcp.release()
  return { dbPath, sessionId: sessionId! }
}

async function recover(dbPath: string, sessionId: string) {
  const engine = await createEngine({ database: dbPath, model: modelFor(server), recovery: { onOpen: false }, mcp: mcpServersFor(mcp.url) })
  try {
    const [turn] = await engine.recover()
    await turn.done.catch(() => undefined)
    const part = (await engine.messages(sessionId)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
    return { part, calls: mcp.state.calls.length }
  } finally {
    await engine.close()
  }
}

test('an idempotent MCP call is sent again by the engine that recovers the turn, and completes', async () => {
  const { dbPath, sessionId } = await killMidCall('slow_read', { key: 'k' })
  const { part, calls } = await recover(dbPath, sessionId)
  expect(calls).toBe(2)
  expect(part).toMatchObject({ tool: 'slow_read', state: { status: 'completed', output: { content: [{ text: 'read k' }] } } })
})

test('a non-idempotent MCP call is not sent again', async () => {
  const { dbPath, sessionId } = await killMidCall('slow_write', { key: 'w' })
  const { part, calls } = await recover(dbPath, sessionId)
  expect(calls).toBe(1)
  expect(part.state.status === 'error' ? part.state.error : part.state.status).toMatch(/in-doubt|interrupted by a restart/)
})

test('a tool the server removed between the crash and the recovery: the call is an error naming it', async () => {
  const { dbPath, sessionId } = await killMidCall('slow_read', { key: 'gone' })
  mcp.state.removed.add('slow_read')
  const { part, calls } = await recover(dbPath, sessionId)
  expect(calls).toBe(1)
  expect(part).toMatchObject({ tool: 'slow_read', state: { status: 'error', error: expect.stringMatching(/tool 'slow_read' is no longer available \(removed\)/) } })
})
