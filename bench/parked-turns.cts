/**
 * RSS per waiting turn (issue 37): 1,000 turns waiting for an approval in one engine, held
 * (`parkAfterMs` large: each keeps its actor, lease and timers) and parked (`parkAfterMs: 0`).
 * One mode per process (`PARKED_MODE=held|parked`; bench/parked-turns.mjs runs both and prints
 * the table): RSS and heap after a GC, before the turns and once all of them wait, divided by
 * the number of turns. The model is in memory (no HTTP server whose recorded requests would be
 * counted), the database a SQLite file in the temp directory.
 *
 *   node --expose-gc bench/parked-turns.mjs [turns]     (default 1000)
 *
 * Not part of `npm test`: a measurement, not an assertion.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../src/index'

const mode = process.env.PARKED_MODE === 'held' ? 'held' : 'parked'
const turns = Number(process.env.PARKED_TURNS ?? 1000)

/** A model that asks for the approval-gated tool on every request (the turns never get further). */
const model = {
  specificationVersion: 'v3',
  provider: 'memory',
  modelId: 'memory-1',
  supportedUrls: {},
  doGenerate: () => Promise.reject(new Error('streams only')),
  async doStream() {
    const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } }
    const parts = [
      { type: 'stream-start', warnings: [] },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'deploy', input: JSON.stringify({ env: 'production' }) },
      { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
    ]
    return { stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) }
  },
}
const deploy = tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async () => 'ok' })

const gc = (globalThis as { gc?: () => void }).gc
function measure(): { rss: number; heap: number } {
  for (let i = 0; i < 3; i++) gc?.()
  const usage = process.memoryUsage()
  return { rss: usage.rss, heap: usage.heapUsed }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-parked-'))
  const engine = await createEngine({ database: path.join(dir, 'bench.db'), model: model as never, tools: { deploy }, parkAfterMs: mode === 'held' ? 3_600_000 : 0 })
  /** Resolves when `count` more turns asked for their approval (held: each then waits in its actor). */
  const allAsked = (count: number) =>
    new Promise<void>((resolve) => {
      const ids = new Set<string>()
      const stop = engine.subscribe((e) => {
        if (e.type === 'approval.requested' && ids.add(e.turnId).size === count) {
          stop()
          resolve()
        }
      })
    })
  const run = async (count: number) => {
    const sessions = await Promise.all(Array.from({ length: count }, () => engine.createSession()))
    const asked = allAsked(count)
    const handles = sessions.map((s) => engine.prompt(s.id, 'ship it'))
    await asked
    // Parked: each handle's done rejects (TurnParkedError) once its row is the parked owner's.
    if (mode === 'parked') await Promise.allSettled(handles.map((t) => t.done))
  }
  await run(50) // warm up: code loaded, caches filled
  const before = measure()
  const t0 = performance.now()
  await run(turns)
  const seconds = (performance.now() - t0) / 1000
  const after = measure()
  const stats = engine.stats()
  console.log(
    JSON.stringify({ mode, turns, rssPerTurnKB: (after.rss - before.rss) / 1024 / turns, heapPerTurnKB: (after.heap - before.heap) / 1024 / turns, seconds, actors: stats.actors, timers: stats.timers, leases: stats.leases }),
  )
  await engine.close()
  fs.rmSync(dir, { recursive: true, force: true })
}

void main()
