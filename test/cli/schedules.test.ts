/**
 * `turnchart schedules <db>` and `turnchart show` list a database's schedules (a child process,
 * read-only): each one's rule, next occurrence, pause, and what `--session` selects.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createEngine } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { startViewer } from '../../src/viewer/viewer-server'
import type { SessionPage } from '../../src/viewer/wire'
import { runCli } from './run-cli'

let dbPath: string
afterEach(() => fs.rmSync(path.dirname(dbPath), { recursive: true, force: true }))

test('turnchart schedules lists each schedule with its rule and next occurrence; --session selects one session; show lists them under the session', async () => {
  dbPath = tempDbPath()
  const server = await startScriptedServer()
  const engine = await createEngine({ database: dbPath, model: modelFor(server) })
  const next = Date.parse('2031-01-06T08:00:00Z')
  let sessionId: string
  try {
    const a = await engine.createSession()
    const b = await engine.createSession()
    sessionId = a.id
    await engine.schedule({ sessionId: a.id, input: 'weekly report', cron: '0 9 * * 1', timezone: 'Europe/Berlin', id: 'sch_weekly' })
    await engine.schedule({ sessionId: b.id, input: 'remind me', at: next, id: 'sch_once' })
    await engine.pauseSchedule('sch_once')
    // One that fired: its turn says so in show.
    server.text('done')
    const completed = new Promise<void>((resolve) => engine.subscribe((e) => e.type === 'turn.transition' && e.to === 'completed' && resolve()))
    await engine.schedule({ sessionId: a.id, input: 'now', at: Date.now(), id: 'sch_now' })
    await completed
  } finally {
    await engine.close()
    await server.close()
  }

  const text = await runCli(['schedules', dbPath])
  expect(text.stderr).toBe('')
  const lines = text.stdout.trim().split('\n')
  expect(lines).toHaveLength(3)
  expect(lines[2]).toMatch(/^sch_now  .*  next none  last \S+ \(trn_\w+\)  now$/)
  expect(lines[0]).toMatch(new RegExp(`^sch_weekly  ${sessionId}  cron '0 9 \\* \\* 1' Europe/Berlin  next \\d{4}-\\d\\d-\\d\\dT0[78]:00:00.000Z  weekly report$`))
  expect(lines[1]).toContain(`sch_once  ${b_id(lines[1])}  at 2031-01-06T08:00:00.000Z  paused  remind me`)
  const json = await runCli(['schedules', dbPath, '--session', sessionId, '--json'])
  expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id: 'sch_weekly', rule: { cron: '0 9 * * 1', timezone: 'Europe/Berlin' }, paused: false }), expect.objectContaining({ id: 'sch_now' })])
  const show = await runCli(['show', dbPath, sessionId])
  expect(show.stdout).toContain('schedule sch_weekly')
  expect(show.stdout).toMatch(/started by schedule sch_now at its occurrence \d{4}-/)

  // The viewer's session page lists them too.
  const viewer = await startViewer({ database: dbPath })
  try {
    const page = (await (await fetch(`${viewer.url}api/sessions/${sessionId}`)).json()) as SessionPage
    expect(page.schedules).toEqual([
      { id: 'sch_weekly', when: "cron '0 9 * * 1' Europe/Berlin", next: expect.any(Number), paused: false, missed: 0 },
      { id: 'sch_now', when: expect.stringMatching(/^at \d{4}-/), next: null, paused: false, missed: 0, lastTurnId: expect.stringMatching(/^trn_/) },
    ])
  } finally {
    await viewer.close()
  }
})

/** The session id on a listed line (the second field). */
const b_id = (line: string) => line.split('  ')[1]
