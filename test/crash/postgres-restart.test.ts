/**
 * A PostgreSQL server that dies under a running turn (`pg_ctl stop -m immediate`, no
 * checkpoint) and comes back a second later, on a cluster of the test's own (issue 51, item 5):
 * the engine waits for its database (`storage.outageMs`) and the turn completes where it was.
 * Mid-stream, the model is not called again; inside a non-idempotent tool, the tool ran once and
 * its result, held by the living process, is written when the server is back: nothing in doubt.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor } from '../support/harness'
import { ownPostgres, startOwnCluster, type OwnCluster } from '../support/own-postgres'
import { testNeeding } from '../support/requires'

const clusterTest = testNeeding(ownPostgres)
jest.setTimeout(90_000)

let cluster: OwnCluster | undefined
let server: ScriptedServer
let engine: Engine | undefined
const events: TurnchartEvent[] = []
const reported: unknown[] = []

beforeEach(async () => {
  server = await startScriptedServer()
  events.length = 0
  reported.length = 0
})
afterEach(async () => {
  await engine?.close().catch(() => undefined)
  engine = undefined
  await server.close()
  await cluster?.remove()
  cluster = undefined
})

/** Kills the server now and starts it again `downMs` later; resolves when it is up again. */
async function outage(downMs: number): Promise<void> {
  await cluster!.crash()
  await new Promise((resolve) => setTimeout(resolve, downMs))
  await cluster!.start()
}

async function open(tools: Parameters<typeof createEngine>[0]['tools'] = {}): Promise<Engine> {
  cluster = await startOwnCluster()
  engine = await createEngine({
    database: cluster.url,
    model: modelFor(server),
    tools,
    flushIntervalMs: 20,
    storage: { outageMs: 30_000 },
    // (the notification listener's reconnects are reported here, not on the console)
    onSubscriberError: (error) => reported.push(error),
  })
  engine.subscribe((event) => events.push(event))
  return engine
}

/** What the turn's log says: its states in order, each seq once. */
async function logOf(turnId: string) {
  const log = await engine!.transitions(turnId)
  expect(new Set(log.map((row) => row.seq)).size).toBe(log.length)
  return log.map((row) => row.to)
}

clusterTest('the server dies mid-stream and is back 1 s later: the turn completes, the model was called once, the text whole', async () => {
  await open()
  const pieces = Array.from({ length: 40 }, (_, i) => `p${i} `)
  server.push({ type: 'stream', chunks: pieces.map((text) => ({ text })), delayMs: 40 })
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'stream')
  const first = new Promise<void>((resolve) => turn.subscribe((e) => e.type === 'part.delta' && resolve()))
  await first
  const down = outage(1000)
  expect((await turn.done).outcome).toBe('completed')
  await down
  expect(server.requests).toHaveLength(1)
  expect(events.some((e) => e.type === 'storage.waiting' && e.turnId === turn.id)).toBe(true)
  expect(await logOf(turn.id)).toEqual(['step-gate', 'streaming', 'completed'])
  const [, answer] = await engine!.messages(session.id)
  expect(answer.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toBe(pieces.join(''))
})

clusterTest("the server dies inside a non-idempotent tool and is back 1 s later: the tool ran once, its result is written, nothing in doubt, the turn completes", async () => {
  let runs = 0
  const charge = tool({
    description: 'charges a card (not idempotent)',
    inputSchema: z.object({ amount: z.number() }),
    execute: async () => {
      runs++
      await cluster!.crash()
      setTimeout(() => void cluster!.start(), 1000)
      return 'charged'
    },
  })
  await open({ charge })
  server.tool('charge', { amount: 5 }).text('paid')
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'pay')
  const result = await turn.done
  expect({ outcome: result.outcome, error: result.error?.message }).toEqual({ outcome: 'completed', error: undefined })
  expect(runs).toBe(1)
  expect(server.requests).toHaveLength(2)
  expect(events.filter((e) => e.type === 'storage.resumed' && e.turnId === turn.id)).toEqual(expect.arrayContaining([expect.objectContaining({ gaveUp: false })]))
  const states = await logOf(turn.id)
  expect(states).not.toContain('call-in-doubt')
  expect(states.at(-1)).toBe('completed')
  const parts = (await engine!.messages(session.id)).flatMap((m) => m.parts)
  expect(parts.filter((p) => p.type === 'tool')).toMatchObject([{ tool: 'charge', state: { status: 'completed', output: 'charged' } }])
})
