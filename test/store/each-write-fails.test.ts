/**
 * Log first, then act: a multi-step turn (a retry, a tool, a compaction) run once for each of
 * its write statements, with that statement made to fail inside the engine's transaction. After
 * each run: no model call and no tool execution happened that no committed row allowed, the
 * turn row and its log agree (`replay` reaches the row's state), and a new engine finishes what
 * was left open with nothing open. Runs on SQLite and on PostgreSQL.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, idempotent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { openParts } from '../hostile/helpers'
import { FailNthWrite, kyselyWith } from '../support/failing-writes'
import { freshDatabase, modelFor } from '../support/harness'

const overflow = { error: { message: 'prompt length 9000 is greater than the context length 8192' } }

function script(server: ScriptedServer): void {
  server.error(429, { error: { message: 'rate limited' } }, { 'retry-after-ms': '1' })
  server.tool('work', { n: 1 }, { text: 'calling the tool' })
  server.error(400, overflow)
  server.text('the summary')
  server.text('the answer')
  for (let i = 0; i < 4; i++) server.text(`recovered ${i}`) // for the engine that finishes the turn
}

interface RunResult {
  failed: boolean
  writes: number
}

async function runFailingAt(n: number): Promise<RunResult> {
  const server = await startScriptedServer()
  const fresh = freshDatabase()
  script(server)
  let executions = 0
  // Idempotent, so the new engine runs a call whose result row failed again and finishes the
  // turn (a non-idempotent one would wait in doubt: test/effects/result-write-fails.test.ts).
  const tools = {
    work: idempotent(tool({
      description: 'Work',
      inputSchema: z.object({ n: z.number() }),
      execute: async () => {
        executions++
        return 'worked'
      },
    })),
  }
  const common = {
    model: modelFor(server),
    tools,
    retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    recovery: { onOpen: false, intervalMs: 0 },
    flushIntervalMs: 10,
  }
  const plugin = new FailNthWrite()
  const db = await kyselyWith(fresh, plugin)
  try {
    const engine = await createEngine({ ...common, database: db })
    const session = await engine.createSession()
    plugin.arm(n)
    const turn = engine.prompt(session.id, 'go')
    await turn.done.catch(() => undefined)
    const calls = server.calls
    const ran = executions
    await engine.close()

    const next = await createEngine({ ...common, database: fresh.database })
    try {
      const where = `write ${n} of ${plugin.writes}`
      const record = await next.getTurn(turn.id)
      // An unknown turn has no log (transitions() throws TurnNotFoundError for it).
      const log = record ? await next.transitions(turn.id) : []
      if (!record) {
        // The transaction that stores the prompt and the turn failed: the turn never started.
        expect({ where, calls, ran, log: log.length }).toEqual({ where, calls: 0, ran: 0, log: 0 })
      } else {
        // No effect without the committed row that entered its state.
        const entered = (state: string) => log.filter((row) => row.to === state).length
        expect({ where, calls: calls <= entered('streaming') + entered('compacting') }).toEqual({ where, calls: true })
        expect({ where, ran: ran <= entered('tool-running') }).toEqual({ where, ran: true })
        // The turn row and its log agree, and the log replays.
        const steps = await next.replay(turn.id)
        expect({ where, state: steps.at(-1)?.state ?? 'idle' }).toEqual({ where, state: record.state })
        // A new engine finishes whatever was left open.
        for (const resumed of await next.recover()) await resumed.done
        const end = await next.getTurn(turn.id)
        expect({ where, ended: end?.outcome !== null }).toEqual({ where, ended: true })
        expect({ where, open: await openParts(next, session.id) }).toEqual({ where, open: [] })
        await next.replay(turn.id)
      }
    } finally {
      await next.close()
    }
    return { failed: plugin.failed, writes: plugin.writes }
  } finally {
    await db.destroy()
    await server.close()
    await fresh.drop()
  }
}

test('each write statement of a turn fails in turn: no effect after the failed row, the log replays, a new engine finishes the turn', async () => {
  let n = 1
  let total = 0
  for (;;) {
    const { failed, writes } = await runFailingAt(n)
    if (!failed) {
      total = writes
      break
    }
    n++
  }
  // The whole turn writes this many statements; each was made to fail once.
  expect(total).toBeGreaterThan(15)
  console.log(`each-write-fails: ${n - 1} runs, one per write statement of the turn (${total} in a run without failure)`)
}, 300_000)
