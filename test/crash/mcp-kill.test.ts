/**
 * An engine SIGKILLed while MCP calls run (a real MCP server over Streamable HTTP in this process
 * holds them): the next engine resumes each turn with the same rules as any tool's. An
 * idempotent call (read-only on a trusted server) is sent again and completes; a non-idempotent
 * one is not re-sent; one whose tool the server removed meanwhile is an error naming it. One
 * child runs the three turns, killed once.
 */
import path from 'node:path'
import fs from 'node:fs'
import { forkChild } from '../support/child-process'
import { createEngine, type ToolPart } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { mcpServersFor } from './mcp-kill-options'
import { endDespiteDoubt } from '../mcp/in-doubt'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startHttp, newState } = require('../fixtures/mcp/mcp-test-server.cjs')

jest.setTimeout(60_000)

let server: ScriptedServer
let mcp: { state: { calls: Array<{ tool: string }>; hold: boolean; removed: Set<string>; onCall: (c: { tool: string }) => void }; url: string; release(): void; close(): Promise<void> }
let dbPath: string
const parts: Record<string, ToolPart> = {}
const calls: Record<string, number> = {}
let inDoubt = false

beforeAll(async () => {
  server = await startScriptedServer()
  mcp = await startHttp(newState())
  dbPath = tempDbPath()
  const tools = ['slow_read', 'slow_write', 'slow_copy']
  for (const tool of tools) server.tool(tool, { key: tool }, { id: `call_${tool}` })
  mcp.state.hold = true
  const arrived = new Promise<void>((resolve) => (mcp.state.onCall = () => mcp.state.calls.length === tools.length && resolve()))
  const child = forkChild(path.join(__dirname, 'mcp-kill-child.ts'), [dbPath, server.url, mcp.url, ...tools])
  await arrived
  const sessionIds = child.messages.filter((m) => m.type === 'session').map((m) => m.sessionId!)
  child.process.kill('SIGKILL')
  await child.exited
  mcp.release()
  mcp.state.calls.length = 0
  mcp.state.removed.add('slow_copy') // gone between the crash and the recovery
  for (let i = 0; i < tools.length; i++) server.text('done after the restart')

  const engine = await createEngine({ database: dbPath, model: modelFor(server), recovery: { onOpen: false }, mcp: mcpServersFor(mcp.url) })
  try {
    const watchers = new Map(sessionIds.map((id) => [id, endDespiteDoubt(engine, id)]))
    const recovered = await engine.recover()
    expect(recovered).toHaveLength(tools.length)
    const ends = await Promise.all(recovered.map((turn) => watchers.get(turn.sessionId)!.ended(turn)))
    inDoubt = ends.includes('in-doubt')
    // (which turn got which tool call is the order their requests reached the model's server)
    for (const session of await engine.listSessions()) {
      const part = (await engine.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
      parts[part.tool] = part
    }
    for (const tool of tools) calls[tool] = mcp.state.calls.filter((c) => c.tool === tool).length
  } finally {
    await engine.close()
  }
})
afterAll(async () => {
  await mcp?.close()
  await server?.close()
  if (dbPath) fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

test('an idempotent MCP call is sent again by the engine that recovers the turn, and completes', () => {
  expect(calls.slow_read).toBe(1)
  expect(parts.slow_read).toMatchObject({ tool: 'slow_read', state: { status: 'completed', output: { content: [{ text: 'read slow_read' }] } } })
})

test('a non-idempotent MCP call is not sent again', () => {
  expect(calls.slow_write).toBe(0)
  const { state } = parts.slow_write
  expect(inDoubt).toBe(true) // the recovered turn waited in call-in-doubt; the test settled it with resolveCall({ error })
  expect(state).toMatchObject({ status: 'error', error: expect.stringContaining('settled by the test') })
})

test('a tool the server removed between the crash and the recovery: the call is an error naming it', () => {
  expect(calls.slow_copy).toBe(0)
  expect(parts.slow_copy).toMatchObject({ tool: 'slow_copy', state: { status: 'error', error: expect.stringMatching(/tool 'slow_copy' is no longer available \(removed\)/) } })
})
