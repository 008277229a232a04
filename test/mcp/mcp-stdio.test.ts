/**
 * The engine's `mcp` option with a stdio server (a real MCP server in a child process the
 * engine spawns, test/fixtures/mcp/mcp-test-server.cjs): a call completes; the process killed
 * mid-call makes a non-idempotent call's outcome unknown (not re-sent) and re-runs an
 * idempotent one in a new process.
 */
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { createHarness, type Harness } from '../support/harness'
import type { ToolPart } from '../../src'
import { endDespiteDoubt } from './in-doubt'

const serverFile = path.join(__dirname, '../fixtures/mcp/mcp-test-server.cjs')

/** The child reports each call it receives (tool and pid) to this endpoint. */
let reports: http.Server
const calls: Array<{ tool: string; pid: number }> = []
let onReport: (call: { tool: string; pid: number }) => void = () => undefined
let h: Harness
const heldFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-mcp-')), 'held')
beforeAll(async () => {
  reports = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const call = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tool: string; pid: number }
      calls.push(call)
      onReport(call)
      res.end()
    })
  })
  await new Promise<void>((resolve) => reports.listen(0, '127.0.0.1', resolve))
  const reportUrl = `http://127.0.0.1:${(reports.address() as AddressInfo).port}/`
  h = await createHarness({
    mcp: {
      servers: {
        local: {
          transport: { type: 'stdio', command: process.execPath, args: [serverFile], env: { MCP_REPORT_URL: reportUrl, MCP_HELD_FILE: heldFile } },
          trust: true,
          approval: 'never',
          reconnect: { attempts: 3, initialDelayMs: 20, maxDelayMs: 50 },
        },
      },
    },
  })
})
afterAll(async () => {
  await h?.close()
  await new Promise((resolve) => reports?.close(resolve))
  fs.rmSync(path.dirname(heldFile), { recursive: true, force: true })
})

const reported = (tool: string) => new Promise<{ tool: string; pid: number }>((resolve) => (onReport = (call) => call.tool === tool && resolve(call)))
async function toolPart(sessionId: string): Promise<ToolPart> {
  return (await h.engine.messages(sessionId)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
}

test('a turn calls a tool of a stdio server and completes', async () => {
  const session = await h.engine.createSession()
  h.server.tool('lookup', { q: 'stdio' }, { id: 'call_1' })
  h.server.text('Found.')
  expect((await h.engine.prompt(session.id, 'look').done).outcome).toBe('completed')
  expect(await toolPart(session.id)).toMatchObject({ state: { status: 'completed', output: { content: [{ text: 'found stdio' }] } } })
})

test('the server process killed mid-call: a non-idempotent call is not re-sent; an idempotent one runs again in a new process', async () => {
  let session = await h.engine.createSession()
  h.server.tool('slow_write', { key: 'a' }, { id: 'call_w' })
  h.server.text('Noted.')
  fs.rmSync(heldFile, { force: true })
  const started = reported('slow_write')
  const doubt = endDespiteDoubt(h.engine, session.id)
  const write = h.engine.prompt(session.id, 'write')
  process.kill((await started).pid, 'SIGKILL')
  const how = await doubt.ended(write)
  expect(calls.filter((c) => c.tool === 'slow_write')).toHaveLength(1)
  const part = await toolPart(session.id)
  expect(how).toBe('in-doubt') // the turn waited; the test settled it with resolveCall({ error })
  expect(part.state).toMatchObject({ status: 'error', error: expect.stringContaining('settled by the test') })

  // idempotent: the killed process held it; the new one answers
  session = await h.engine.createSession()
  fs.rmSync(heldFile, { force: true })
  h.server.tool('slow_read', { key: 'b' }, { id: 'call_r' })
  h.server.text('Read.')
  const pids: number[] = []
  let secondReport!: () => void
  const twice = new Promise<void>((resolve) => (secondReport = resolve))
  onReport = (call) => {
    if (call.tool !== 'slow_read') return
    pids.push(call.pid)
    if (pids.length === 1) process.kill(call.pid, 'SIGKILL')
    else secondReport()
  }
  expect((await h.engine.prompt(session.id, 'read').done).outcome).toBe('completed')
  await twice // (a process reports a call as it starts it; the report may arrive after the answer)
  expect(pids).toHaveLength(2) // sent again, to a new process
  expect(pids[0]).not.toBe(pids[1])
  expect(await toolPart(session.id)).toMatchObject({ state: { status: 'completed', output: { content: [{ text: 'read b' }] } } })
  h.server.tool('lookup', { q: 'again' }, { id: 'call_2' })
  h.server.text('Found.')
  const again = await h.engine.createSession()
  expect((await h.engine.prompt(again.id, 'look').done).outcome).toBe('completed')
  expect(await toolPart(again.id)).toMatchObject({ state: { status: 'completed' } })
})
