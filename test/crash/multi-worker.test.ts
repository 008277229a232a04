/**
 * Three worker processes share one PostgreSQL schema and run 60 turns across 20 sessions; one
 * worker is SIGKILLed mid-run. Every turn completes exactly once, no part is left open, and no
 * session ever had two turns running at once (checked from the transition log's times).
 */
import { type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { forkNode } from '../support/compiled'
import { Client } from 'pg'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'

jest.setTimeout(120_000)

itPostgres('3 workers, 60 turns over 20 sessions, one worker killed: every turn completes exactly once', async () => {
  const schema = freshSchemaName()
  const database = withParams(pgBaseUrl, { schema })
  const server: ScriptedServer = await startScriptedServer()
  // Every reply is the same slow answer, so it does not matter which worker takes which.
  for (let i = 0; i < 120; i++) server.push({ type: 'stream', chunks: Array.from({ length: 8 }, () => ({ text: 'ok ' })), delayMs: 15 })
  const setup: Engine = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 } })
  const sessions: string[] = []
  for (let i = 0; i < 20; i++) sessions.push((await setup.createSession()).id)

  // The database is the source of truth for progress: a worker killed mid-run cannot report
  // the turns it ended, and the turns it ran are finished by the workers that take them over.
  const client = new Client({ connectionString: pgBaseUrl })
  await client.connect()
  await client.query(`set search_path to "${schema}"`)
  const workers: ChildProcess[] = []
  const alive = new Set<number>()
  const turnsPerSession = 3
  const totalTurns = sessions.length * turnsPerSession
  /** A prompt sent but not yet stored: to which worker, and how many turns the session had then. */
  const sent = new Map<string, { worker: number; turnsBefore: number }>()
  let killed = -1
  let round = 0

  await Promise.all(
    [0, 1, 2].map(
      (index) =>
        new Promise<void>((resolve, reject) => {
          const worker = forkNode(path.join(__dirname, 'pg-worker.ts'), [database, server.url], {
            stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          })
          workers[index] = worker
          worker.on('message', (m: { type: string; sessionId?: string }) => {
            if (m.type === 'ready') {
              alive.add(index)
              resolve()
            }
            // A worker whose previous turn of the session is committed but not yet settled in it
            // refuses the next prompt (SessionBusyError): send it again on the next round.
            if (m.type === 'refused' && m.sessionId && sent.get(m.sessionId)?.worker === index) sent.delete(m.sessionId)
          })
          worker.on('exit', (code, signal) => {
            alive.delete(index)
            if (signal !== 'SIGKILL' && code !== 0) reject(new Error(`worker ${index} exited with ${code}`))
          })
        }),
    ),
  )

  const deadline = Date.now() + 90_000
  for (;;) {
    if (Date.now() > deadline) throw new Error('the workers did not finish the 60 turns in time')
    const rows = (await client.query('select session_id, outcome from turnchart_turns')).rows as Array<{ session_id: string; outcome: string | null }>
    const completed = rows.filter((r) => r.outcome === 'completed').length
    if (completed === totalTurns && rows.length === totalTurns) break
    if (completed >= 15 && killed < 0) {
      killed = 1
      alive.delete(1)
      workers[1].kill('SIGKILL')
    }
    for (const sessionId of sessions) {
      const mine = rows.filter((r) => r.session_id === sessionId)
      const pending = sent.get(sessionId)
      if (pending) {
        if (mine.length > pending.turnsBefore) sent.delete(sessionId) // stored: the engines take it from here
        else if (!alive.has(pending.worker)) sent.delete(sessionId) // lost with a killed worker: send again
        else continue
      }
      if (mine.some((r) => r.outcome === null) || mine.length >= turnsPerSession || sent.has(sessionId)) continue
      const candidates = [...alive]
      const worker = candidates[round++ % candidates.length]
      sent.set(sessionId, { worker, turnsBefore: mine.length })
      workers[worker].send({ type: 'prompt', sessionId, text: `turn ${mine.length + 1}` })
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  for (const worker of workers) if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGTERM')
  expect(killed).toBe(1)

  try {
    const turns = (await client.query('select id, session_id, outcome from turnchart_turns')).rows
    expect(turns).toHaveLength(totalTurns)
    expect(turns.every((t) => t.outcome === 'completed')).toBe(true)
    const finals = (await client.query("select turn_id, count(*)::int as n from turnchart_transitions where to_state in ('completed','failed','aborted') group by turn_id")).rows
    expect(finals).toHaveLength(totalTurns)
    expect(finals.every((r) => r.n === 1)).toBe(true)
    const parts = (await client.query('select type, data from turnchart_parts')).rows.map((r) => ({ type: r.type, ...JSON.parse(r.data) }))
    const open = parts.filter((p) => ((p.type === 'text' || p.type === 'reasoning') && p.time.end == null) || (p.type === 'tool' && ['pending', 'running'].includes(p.state.status)))
    expect(open).toEqual([])
    // No session had two turns running at once: each turn's [first, last] transition times are disjoint.
    const spans = (await client.query('select t.session_id, x.turn_id, min(x.at)::bigint as a, max(x.at)::bigint as b from turnchart_transitions x join turnchart_turns t on t.id = x.turn_id group by t.session_id, x.turn_id')).rows
    const bySession = new Map<string, Array<{ a: number; b: number }>>()
    for (const row of spans) bySession.set(row.session_id, [...(bySession.get(row.session_id) ?? []), { a: Number(row.a), b: Number(row.b) }])
    for (const [, list] of bySession) {
      list.sort((x, y) => x.a - y.a)
      for (let i = 1; i < list.length; i++) expect(list[i].a).toBeGreaterThanOrEqual(list[i - 1].b)
    }
    const recovered = (await client.query("select count(distinct turn_id)::int as n from turnchart_transitions where event_type = 'turn.crashed'")).rows[0].n
    console.log(`multi-process: ${totalTurns} turns completed once each; ${recovered} taken over from the killed worker`)
  } finally {
    await client.end()
    await setup.close()
    await server.close()
    await dropSchemas(schema)
  }
})
