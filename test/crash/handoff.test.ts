/**
 * A deploy without a lease wait (issue 39, item 1): an engine process SIGTERMed while its turn
 * streams hands the turn over (`close({ handoff: true })`). The step that was streaming is not
 * cut (no model call is made twice), the tool runs once, the turn's row is written at its next
 * step gate and released, and the other engine, told by a PostgreSQL notification, takes it at
 * once: its lease (60 s) and its recovery sweep (60 s) are far beyond this test's wait.
 */
import path from 'node:path'
import { Client } from 'pg'
import { createEngine, InvalidOptionError, type Engine, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkChild, type TestChild } from '../support/child-process'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'
import { tool } from 'ai'
import { z } from 'zod'

jest.setTimeout(60_000)

let server: ScriptedServer
let schema: string
let engine: Engine | undefined
let child: TestChild | undefined
afterEach(async () => {
  child?.process.kill('SIGKILL')
  await engine?.close()
  await server?.close()
  if (schema) await dropSchemas(schema)
})

itPostgres('SIGTERM hands a streaming turn over at its next step gate: another engine takes it at once, no model call or tool run twice; the browser response goes on through it, every chunk once', async () => {
  schema = freshSchemaName()
  const database = withParams(pgBaseUrl, { schema })
  server = await startScriptedServer()
  // Step 1 streams slowly, then calls the tool; step 2 answers.
  server.push({ type: 'stream', delayMs: 30, chunks: [...Array.from({ length: 12 }, (_, i) => ({ text: `t${i} ` })), { tool: { name: 'work', input: { n: 1 } } }] })
  server.text('the answer')
  const ran: number[] = []
  const tools = {
    work: tool({
      description: 'Work',
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }) => (ran.push(n), `worked ${n}`),
    }),
  }
  const events: TurnchartEvent[] = []
  // The taking engine: its sweep and a lease run out only after a minute; only the notification can bring the turn here in time.
  engine = await createEngine({ database, model: modelFor(server), tools, leaseMs: 60_000, recovery: { intervalMs: 60_000 }, flushIntervalMs: 20 })
  engine.subscribe((e) => events.push(e))
  await engine.notifications!.whenListening(5000)
  const sweepsAtOpen = engine.stats().sweeps
  const session = await engine.createSession()

  child = forkChild(path.join(__dirname, 'handoff-child.ts'), [database, server.url])
  const ready = (await child.waitFor((m) => m.type === 'ready')) as { port?: number }
  // A browser's POST to the child's chat handler: the turn starts there, its response streams from there.
  const response = await fetch(`http://127.0.0.1:${ready.port}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: session.id, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }] }),
  })
  expect(response.status).toBe(200)
  const read = readSse(response)
  const streaming = await child.waitFor((m) => m.type === 'transition' && m.to === 'streaming')
  const turnId = streaming.turnId!
  child.process.kill('SIGTERM')

  // The browser's response goes on through this engine's rows, to the end: every chunk once.
  const chunks = await read
  const text = chunks.filter((c) => c.type === 'text-delta').map((c) => c.delta).join('')
  expect(text).toBe(`${Array.from({ length: 12 }, (_, i) => `t${i} `).join('')}the answer`)
  expect(chunks.filter((c) => c.type === 'tool-input-available')).toHaveLength(1)
  expect(chunks.filter((c) => c.type === 'tool-output-available')).toHaveLength(1)
  expect(chunks.filter((c) => c.type === 'start')).toHaveLength(1)
  expect(chunks.some((c) => c.type === 'error')).toBe(false)
  expect(chunks.at(-1)?.type).toBe('finish')
  const opened = chunks.filter((c) => c.type === 'text-start').map((c) => c.id)
  expect(new Set(opened).size).toBe(opened.length)

  // The child finished the streaming step, ran the tool, stopped at the gate, and exited 0 once the stream ended.
  expect(await child.exited).toBe(0)
  expect(child.messages.filter((m) => m.type === 'tool-ran')).toHaveLength(1)

  // This engine resumed it (told at once) and finished it.
  await new Promise<void>((resolve) => {
    const check = () => events.some((e) => e.type === 'turn.transition' && e.turnId === turnId && e.to === 'completed') && resolve()
    check()
    engine!.subscribe(() => check())
  })
  expect(ran).toEqual([]) // the tool ran in the child, once; not again here
  expect(server.calls).toBe(2) // step 1 (in the child, never cut) and step 2 (here)

  const rows = await engine.transitions(turnId)
  const handedAt = rows.findIndex((r) => r.event === 'tools.finished' && r.to === 'step-gate')
  expect(handedAt).toBeGreaterThan(0)
  // The child's last row is the gate's; the first of this engine's is the takeover.
  expect(rows[handedAt + 1]).toMatchObject({ event: 'turn.crashed', from: 'step-gate', to: 'interrupted' })
  expect(rows.map((r) => r.to).filter((to) => to === 'streaming')).toHaveLength(2)
  // Taken on the release's notification: no sweep ran here but the one at open (the next is a minute away), and the lease (a minute) did not run out.
  expect(engine.stats().sweeps).toBe(sweepsAtOpen)
  const parts = (await engine.messages(session.id)).flatMap((m) => m.parts)
  expect(parts.filter((p) => p.type === 'tool')).toHaveLength(1)
  expect(parts.some((p) => p.type === 'step-finish' && (p as { reason?: string }).reason === 'interrupted')).toBe(false)
  const client = new Client({ connectionString: pgBaseUrl })
  await client.connect()
  const { rows: owner } = await client.query(`select owner from "${schema}".turnchart_turns where id = $1`, [turnId])
  await client.end()
  // This engine claimed it (its owner id names this process), not the child.
  expect(String(owner[0].owner).split(':')[1]).toBe(String(process.pid))
})

/** The chunks of a UI message stream response (SSE `data:` lines), until it ends. */
async function readSse(response: Response): Promise<Array<{ type: string; delta?: string; id?: string }>> {
  const body = await response.text()
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)))
}

itPostgres('close({ handoff: true, abortTurns: true }) is refused with an InvalidOptionError, and the engine stays open', async () => {
  schema = freshSchemaName()
  server = await startScriptedServer()
  engine = await createEngine({ database: withParams(pgBaseUrl, { schema }), model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 } })
  const error = await engine.close({ handoff: true, abortTurns: true }).then(
    () => null,
    (e: unknown) => e,
  )
  expect(InvalidOptionError.isInstance(error)).toBe(true)
  expect((error as InvalidOptionError).option).toBe('handoff')
  expect(await engine.createSession()).toMatchObject({ id: expect.any(String) })
})
