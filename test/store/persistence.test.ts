/**
 * What the store holds after a turn: the transition log, the turn row, parts written at
 * boundaries and on an interval (never per delta), pragmas, and no secrets.
 */
import fs from 'node:fs'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect, type LogEvent } from 'kysely'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { createHarness, modelFor, pgBaseUrl, sqliteOnly, tempDbPath, type Harness } from '../support/harness'

let h: Harness | undefined
let server: ScriptedServer | undefined
afterEach(async () => {
  await h?.close()
  await server?.close()
  h = undefined
  server = undefined
})

test('each transition is a row: seq, from, event, to, time; the turn row holds the final state', async () => {
  h = await createHarness()
  h.server.text('hello')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  await turn.done
  const log = await h.engine.transitions(turn.id)
  expect(log.map(({ seq, from, event, to }) => ({ seq, from, event, to }))).toEqual([
    { seq: 1, from: 'idle', event: 'turn.start', to: 'step-gate' },
    { seq: 2, from: 'step-gate', event: 'gate.continue', to: 'streaming' },
    { seq: 3, from: 'streaming', event: 'step.finished', to: 'completed' },
  ])
  expect(log[2].payload).toEqual({ finishReason: 'stop', toolCalls: 0, overflow: false })
  expect(log[0].time).toBeLessThanOrEqual(log[2].time)
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'completed', outcome: 'completed', step: 1, attempt: 1, retryAt: null, error: null })
  const transitions = h.events.filter((e) => e.type === 'turn.transition')
  expect(transitions.map((e) => (e as { to: string }).to)).toEqual(['step-gate', 'streaming', 'completed'])
})

test('messages and parts: shapes of the contract, in order, every streamed part closed', async () => {
  h = await createHarness({ pricing: { input: 1, output: 2 } })
  h.server.reasoning('thinking', 'answer', { usage: { input: 1000, output: 500, reasoning: 100, cacheRead: 200 } })
  const session = await h.engine.createSession()
  await h.engine.prompt(session.id, 'hi').done
  const [user, assistant] = await h.engine.messages(session.id)
  expect(user.info).toMatchObject({ role: 'user', sessionId: session.id })
  expect(user.parts).toMatchObject([{ type: 'text', text: 'hi' }])
  expect(assistant.info).toMatchObject({
    role: 'assistant',
    finish: 'stop',
    tokens: { input: 1000, output: 500, reasoning: 100, cache: { read: 200, write: 0 } },
  })
  expect(assistant.info.time.completed).toBeGreaterThanOrEqual(assistant.info.time.created)
  expect(assistant.info.cost).toBeCloseTo((800 * 1 + 200 * 1 + 500 * 2) / 1e6)
  expect(assistant.parts.map((p) => p.type)).toEqual(['step-start', 'reasoning', 'text', 'step-finish'])
  for (const part of assistant.parts) {
    if (part.type === 'text' || part.type === 'reasoning') expect(part.time.end).toBeDefined()
    expect(part).toMatchObject({ sessionId: session.id, messageId: assistant.info.id })
  }
  expect(assistant.parts[3]).toMatchObject({ type: 'step-finish', reason: 'stop', tokens: { input: 1000, output: 500 } })
})

sqliteOnly('streamed text is written at boundaries and on the interval, never once per delta', async () => {
  server = await startScriptedServer()
  const writes: string[] = []
  const db = new Kysely<any>({
    dialect: new SqliteDialect({ database: new Database(tempDbPath()) }),
    log: (event: LogEvent) => {
      if (event.level === 'query' && /turnchart_parts/.test(event.query.sql) && /^insert/i.test(event.query.sql)) writes.push(event.query.sql)
    },
  })
  const engine = await createEngine({ database: db, model: modelFor(server), flushIntervalMs: 10_000 })
  const deltas = 2000
  server.text('x'.repeat(deltas), { deltas })
  const session = await engine.createSession()
  let published = 0
  engine.subscribe((e) => {
    if (e.type === 'part.delta') published++
  })
  await engine.prompt(session.id, 'hi').done
  expect(published).toBe(deltas)
  expect(writes.length).toBeLessThan(10)
  const messages = await engine.messages(session.id)
  expect(messages[1].parts.find((p) => p.type === 'text')).toMatchObject({ text: 'x'.repeat(deltas) })
  await engine.close()
  await db.destroy()
})

/**
 * The commits of the harness's database, as they happen: on SQLite a change of its WAL file (a
 * commit appends its frames there), on PostgreSQL a notification from a trigger on the parts
 * table (delivered when the writing transaction commits).
 */
async function watchCommits(harness: Harness): Promise<{ count(): number; since(count: number, timeoutMs: number): Promise<void>; close(): Promise<void> }> {
  let commits = 0
  const waiting = new Set<() => void>()
  const commit = () => {
    commits++
    for (const wake of waiting) wake()
    waiting.clear()
  }
  let close: () => Promise<void>
  if (harness.dialect === 'sqlite') {
    const watcher = fs.watch(`${harness.dbPath}-wal`, commit)
    close = async () => watcher.close()
  } else {
    const { Client } = await import('pg')
    const schema = new URL(harness.dbPath).searchParams.get('schema')!
    const client = new Client({ connectionString: pgBaseUrl })
    await client.connect()
    await client.query(`create function "${schema}".parts_committed() returns trigger language plpgsql as $$ begin perform pg_notify('${schema}_parts', ''); return null; end $$`)
    await client.query(`create trigger parts_committed after insert or update on "${schema}".turnchart_parts for each statement execute function "${schema}".parts_committed()`)
    client.on('notification', commit)
    await client.query(`listen "${schema}_parts"`)
    close = () => client.end()
  }
  return {
    count: () => commits,
    since: (count, timeoutMs) =>
      new Promise((resolve, reject) => {
        if (commits > count) return resolve()
        const timer = setTimeout(() => (waiting.delete(wake), reject(new Error(`no commit within ${timeoutMs} ms`))), timeoutMs)
        const wake = () => (clearTimeout(timer), resolve())
        waiting.add(wake)
      }),
    close: () => close(),
  }
}

test('while a stream is open, its text reaches the database within the flush interval', async () => {
  h = await createHarness({ flushIntervalMs: 20 })
  h.server.push({ type: 'stream', chunks: [{ text: 'partial ' }, { text: 'answer' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  const commits = await watchCommits(h)
  try {
    await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'answer')
    const storedText = async () => ((await h!.engine.messages(session.id))[1]?.parts.find((p) => p.type === 'text') as { text: string } | undefined)?.text ?? ''
    // At each commit (read through the engine, so after it), until the whole text is there.
    const started = Date.now()
    let seen = commits.count()
    let stored = await storedText()
    while (stored !== 'partial answer') {
      // A commit since the read began (or the next one): the read may have missed it.
      await commits.since(seen, 2000)
      seen = commits.count()
      stored = await storedText()
    }
    expect(stored).toBe('partial answer')
    expect(Date.now() - started).toBeLessThan(2000)
  } finally {
    await commits.close()
  }
  turn.abort()
  await turn.done
})

sqliteOnly('the database file uses WAL and foreign keys; migrations run once', async () => {
  h = await createHarness()
  const second = await createEngine({ database: h.dbPath, model: modelFor(h.server) })
  await second.close()
  const raw = new Database(h.dbPath, { readonly: true })
  expect(raw.pragma('journal_mode', { simple: true })).toBe('wal')
  const migrations = raw.prepare('select name from turnchart_migrations').all()
  expect(migrations).toEqual([{ name: '0001_initial' }, { name: '0002_leases_and_touched_parts' }, { name: '0003_drop_parts_by_message_index' }, { name: '0004_turn_epoch' }, { name: '0005_control_requests' }, { name: '0006_conversation' }, { name: '0007_open_turns_index' }, { name: '0008_session_metadata' }, { name: '0009_steering_and_edited_approvals' }, { name: '0010_postgres_notifications' }, { name: '0011_run_trees' }, { name: '0012_approval_receipts' }, { name: '0013_notify_released_turns' }, { name: '0014_tree_spending' }, { name: '0015_session_tenant' }, { name: '0016_concurrency_slots' }, { name: '0017_session_forked_from' }, { name: '0018_slots_last_tenant' }, { name: '0019_transition_storage_waits' }, { name: '0020_transitions_by_key' }, { name: '0021_schedules' }, { name: '0022_circuits' }, { name: '0023_notify_circuits' }])
  const tables = raw.prepare("select name from sqlite_master where type='table' order by name").all().map((r: any) => r.name)
  expect(tables).toEqual(['turnchart_circuits', 'turnchart_controls', 'turnchart_messages', 'turnchart_migrations', 'turnchart_parts', 'turnchart_queue', 'turnchart_schedules', 'turnchart_sessions', 'turnchart_slots', 'turnchart_transitions', 'turnchart_tree_spending', 'turnchart_turns'])
  raw.close()
})

sqliteOnly('nothing secret is stored: no API key, no request header, no request URL', async () => {
  h = await createHarness()
  h.server.error(400, { error: { message: 'bad request' } }, { 'set-cookie': 'session=secret-cookie', 'x-request-id': 'req_1' })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result.outcome).toBe('failed')
  expect(result.error?.responseHeaders).toMatchObject({ 'x-request-id': 'req_1' })
  await h.engine.close()
  const dump = fs.readFileSync(h.dbPath).toString('latin1') + (fs.existsSync(h.dbPath + '-wal') ? fs.readFileSync(h.dbPath + '-wal').toString('latin1') : '')
  expect(dump).toContain('bad request')
  expect(dump).not.toContain('test-key')
  expect(dump.toLowerCase()).not.toContain('authorization')
  expect(dump).not.toContain('secret-cookie')
  expect(dump).not.toContain(h.server.url)
})
