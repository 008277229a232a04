/**
 * The CLI's read commands never change a database: on a database whose app was killed
 * mid-turn (a real child process, SIGKILL), `sessions`, `show` and `replay` leave the file and
 * its WAL byte-for-byte unchanged, and the turn is still resumable by the app's next engine.
 * Databases that are not turnchart's are refused and left untouched; PostgreSQL URLs are read
 * in read-only transactions.
 */
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { cliArgs, forkNode } from '../support/compiled'
import { createEngine, type Store } from '../../src'
import { runCli as runCliInProcess, usageHint } from '../../src/cli/main'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'
import { runCli } from './run-cli'

jest.setTimeout(90_000)

let server: ScriptedServer
let dbPath: string
beforeEach(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
})
afterEach(async () => {
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

/** The database file and its WAL (the -shm is shared memory, not data). */
function hashFiles(file: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const suffix of ['', '-wal']) {
    if (fs.existsSync(file + suffix)) out[suffix || 'db'] = crypto.createHash('sha256').update(fs.readFileSync(file + suffix)).digest('hex')
  }
  return out
}

/** Runs test/crash/crash-child.ts and SIGKILLs it once the model's text has been stored. */
function crashMidTurn(): Promise<{ sessionId: string; turnId: string }> {
  return new Promise((resolve, reject) => {
    const child = forkNode(path.join(__dirname, '../crash/crash-child.ts'), [dbPath, server.url], {
      env: { ...process.env, TURNCHART_CHILD: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let sessionId = ''
    let turnId = ''
    let killed = false
    child.on('message', (message: { type: string; sessionId?: string; turnId?: string; to?: string }) => {
      if (message.type === 'session') sessionId = message.sessionId!
      if (message.turnId) turnId = message.turnId
      // Text is flushed every 10 ms; the streaming state's transition is committed before this message.
      if (!killed && message.type === 'transition' && message.to === 'streaming') {
        killed = true
        setTimeout(() => child.kill('SIGKILL'), 100)
      }
    })
    child.on('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve({ sessionId, turnId }) : reject(new Error(`child exited with ${_code}`))))
  })
}

test('sessions, show and replay leave a crashed database byte-for-byte unchanged, and its turn resumable', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'partial ' }, { text: 'answer' }], end: 'hang' })
  const { sessionId, turnId } = await crashMidTurn()
  const before = hashFiles(dbPath)
  expect(before.db).toBeDefined()

  const runs = await Promise.all([
    runCli(['sessions', dbPath]),
    runCli(['show', dbPath, sessionId, '--json']),
    runCli(['replay', dbPath, turnId]),
  ])
  for (const run of runs) expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
  const [sessions, show, replay] = runs
  expect(sessions.stdout).toContain(`${sessionId}`)
  expect(sessions.stdout).toContain('unfinished (streaming)')
  const view = JSON.parse(show.stdout)
  expect(view.turns.map((t: { id: string; outcome: unknown }) => [t.id, t.outcome])).toEqual([[turnId, null]])
  expect(replay.stdout).toContain(`turn ${turnId}`)
  expect(replay.stdout).toContain('replayed through the chart')
  expect(hashFiles(dbPath)).toEqual(before)

  // The app's next engine still finds the turn and finishes it.
  server.text('resumed')
  const engine = await createEngine({ database: dbPath, model: modelFor(server), recovery: { onOpen: false } })
  try {
    const turns = await engine.recover()
    expect(turns.map((t) => t.id)).toEqual([turnId])
    expect((await turns[0].done).outcome).toBe('completed')
  } finally {
    await engine.close()
  }
})

/** `turnchart view <db>` as a child process: its URL once it serves, and a stop that awaits its exit. */
async function startViewCommand(database: string): Promise<{ url: string; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, [...cliArgs(), 'view', database], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  let output = ''
  const url = await new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk
      const match = /open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output)
      if (match) resolve(match[1])
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    exited.then(() => reject(new Error(`turnchart view exited before serving:\n${output}`)))
  })
  return {
    url,
    stop: () => {
      child.kill('SIGTERM')
      return exited
    },
  }
}

test('on a WAL database closed cleanly, sessions, show, replay and view leave no file beside it (no -wal, no -shm) and the file unchanged', async () => {
  server.text('hello')
  const engine = await createEngine({ database: dbPath, model: modelFor(server) })
  const session = await engine.createSession({ title: 'clean' })
  const turn = engine.prompt(session.id, 'hi')
  await turn.done
  await engine.close()
  const folder = path.dirname(dbPath)
  const files = fs.readdirSync(folder).sort()
  expect(files).toEqual([path.basename(dbPath)])
  const before = hashFiles(dbPath)
  // The database is in WAL mode (the case where a read-only connection creates -wal and -shm).
  expect(fs.readFileSync(dbPath).subarray(18, 20)).toEqual(Buffer.from([2, 2]))

  for (const command of [['sessions', dbPath], ['show', dbPath, session.id], ['replay', dbPath, turn.id, '--json']]) {
    const run = await runCli(command)
    expect({ command: command[0], code: run.code, stderr: run.stderr }).toEqual({ command: command[0], code: 0, stderr: '' })
    expect({ command: command[0], files: fs.readdirSync(folder).sort() }).toEqual({ command: command[0], files })
  }
  const view = await startViewCommand(dbPath)
  const listed = (await (await fetch(`${view.url}api/sessions`)).json()) as Array<{ id: string }>
  expect(listed.map((s) => s.id)).toEqual([session.id])
  // While it serves, its connection holds the -wal and -shm files SQLite needs; they go with it.
  expect(await view.stop()).toBe(0)
  expect(fs.readdirSync(folder).sort()).toEqual(files)
  expect(hashFiles(dbPath)).toEqual(before)
})

test('prune --json says what it deleted; replay and show then say the log was pruned', async () => {
  server.text('hello')
  const engine = await createEngine({ database: dbPath, model: modelFor(server) })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'hi')
  await turn.done
  const logged = (await engine.transitions(turn.id)).length
  await engine.close()
  expect(logged).toBeGreaterThan(0)

  const pruned = await cli('prune', dbPath, '--older-than', '0s', '--json')
  expect(pruned.stderr).toBe('')
  expect(JSON.parse(pruned.stdout)).toEqual({ deleted: logged, endedBefore: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })

  const replay = await cli('replay', dbPath, turn.id)
  expect(replay.code).toBe(0)
  expect(replay.stdout).toContain(`turn ${turn.id} (session ${session.id}): completed`)
  expect(replay.stdout).toContain(`the transition log of this turn was pruned (turnchart prune); its messages and parts remain: turnchart show ${dbPath} ${session.id}`)
  expect(replay.stdout).not.toContain('transitions replayed')
  expect(JSON.parse((await cli('replay', dbPath, turn.id, '--json')).stdout)).toMatchObject({ pruned: true, transitions: [] })
  const show = await cli('show', dbPath, session.id)
  expect(show.stdout).toContain(`turn ${turn.id}: completed  transition log pruned`)
  expect(show.stdout).toContain('hello')
  expect(JSON.parse((await cli('prune', dbPath, '--older-than', '1d', '--json')).stdout)).toMatchObject({ deleted: 0 })
})

/** The CLI in this process (quicker than a child for the cases that need no crash). */
async function cli(...args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCliInProcess(args, {
    stdout: { write: (s: string) => ((stdout += s), true) } as never,
    stderr: { write: (s: string) => ((stderr += s), true) } as never,
    env: { NO_COLOR: '1' },
  })
  return { code, stdout, stderr }
}

test('a SQLite file of another app is refused, by name, and left unchanged (no table added)', async () => {
  const Database = require('better-sqlite3')
  const other = new Database(dbPath)
  other.exec("create table users (id integer primary key, name text); insert into users values (1, 'ada')")
  other.close()
  const before = hashFiles(dbPath)
  for (const command of [['sessions', dbPath], ['show', dbPath, 'ses_x'], ['replay', dbPath, 'trn_x'], ['recover', dbPath], ['prune', dbPath, '--older-than', '1d']]) {
    const run = await cli(...command)
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(`turnchart: ${dbPath} is not a turnchart database: it has none of the turnchart_* tables\n`)
  }
  expect(hashFiles(dbPath)).toEqual(before)
  const check = new Database(dbPath, { readonly: true })
  expect(check.prepare("select name from sqlite_master where type = 'table'").all()).toEqual([{ name: 'users' }])
  check.close()
})

test('an empty file is refused and stays empty; a file that is not SQLite is refused', async () => {
  fs.writeFileSync(dbPath, '')
  expect((await cli('sessions', dbPath)).stderr).toContain('is not a turnchart database')
  expect(fs.statSync(dbPath).size).toBe(0)
  fs.writeFileSync(dbPath, 'hello, this is not a database at all'.repeat(100))
  const run = await cli('sessions', dbPath, '--json')
  expect(run.code).toBe(1)
  expect(run.stderr).toContain('is not a turnchart database: it is not a SQLite database')
})

test('--json output of sessions, show and replay', async () => {
  server.text('hello there')
  const engine = await createEngine({ database: dbPath, model: modelFor(server) })
  const session = await engine.createSession({ title: 'json' })
  const turn = engine.prompt(session.id, 'hi')
  await turn.done
  await engine.close()

  const sessions = JSON.parse((await cli('sessions', dbPath, '--json')).stdout)
  expect(sessions).toEqual([
    expect.objectContaining({ id: session.id, title: 'json', messages: 2, turns: [{ id: turn.id, state: 'completed', outcome: 'completed' }] }),
  ])
  const view = JSON.parse((await cli('show', dbPath, session.id, '--json')).stdout)
  expect(view.session.id).toBe(session.id)
  expect(view.messages[1].parts.some((p: { type: string; text?: string }) => p.type === 'text' && p.text === 'hello there')).toBe(true)
  expect(view.turns[0].transitions.at(-1).to).toBe('completed')
  const replay = JSON.parse((await cli('replay', dbPath, turn.id, '--json')).stdout)
  expect(replay.turn.outcome).toBe('completed')
  expect(replay).not.toHaveProperty('pruned')
  expect(replay.steps.map((s: { state: string }) => s.state)).toEqual(replay.transitions.map((t: { to: string }) => t.to))
  expect(replay.steps.at(-1).state).toBe('completed')
})

test('missing arguments are named; --version prints the package version', async () => {
  const show = await cli('show', dbPath)
  expect(show.code).toBe(2)
  expect(show.stderr).toBe(`turnchart: missing argument <session>\n${usageHint('show')}`)
  expect((await cli('replay')).stderr).toContain('missing argument <db>')
  expect((await cli('prune', dbPath)).stderr).toContain('missing option --older-than <age>')
  const version = await cli('--version')
  expect(version).toEqual({ code: 0, stdout: `${require('../../package.json').version}\n`, stderr: '' })
})

test('recover (a writing command) ends a dead process\'s turn as aborted; prune deletes ended logs', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'partial ' }], end: 'hang' })
  const { turnId } = await crashMidTurn()
  const recovered = await cli('recover', dbPath, '--json')
  expect(recovered.stderr).toBe('')
  expect(JSON.parse(recovered.stdout)).toEqual([expect.objectContaining({ id: turnId, outcome: 'aborted' })])
  expect(await cli('recover', dbPath)).toEqual({ code: 0, stdout: 'no turn to recover\n', stderr: '' })
  expect((await cli('prune', dbPath, '--older-than', '1h')).stdout).toMatch(/^deleted 0 transition rows/)
  expect((await cli('prune', dbPath, '--older-than', '0s')).stdout).toMatch(/^deleted [1-9]\d* transition rows/)
})

itPostgres('PostgreSQL URLs: read in read-only transactions; a schema without turnchart tables is refused', async () => {
  const schema = freshSchemaName()
  const empty = freshSchemaName()
  const url = withParams(pgBaseUrl, { schema })
  try {
    server.text('from postgres')
    const engine = await createEngine({ database: url, model: modelFor(server) })
    const session = await engine.createSession()
    const turn = engine.prompt(session.id, 'hi')
    await turn.done
    await engine.close()

    const sessions = await cli('sessions', url, '--json')
    expect(sessions.stderr).toBe('')
    expect(JSON.parse(sessions.stdout).map((s: { id: string }) => s.id)).toEqual([session.id])
    expect(JSON.parse((await cli('replay', url, turn.id, '--json')).stdout).turn.outcome).toBe('completed')

    // The read-only store's transactions refuse writes on the server side.
    const { openReadOnlyStore } = require('../../src/store/backends/read-only-store')
    const store = await openReadOnlyStore(url)
    await expect(store.read((s: Store) => s.sessions.insert({ id: 'ses_w', title: null, time: { created: 1, updated: 1 } }))).rejects.toThrow(/read-only transaction/)
    await store.close()

    const refused = await cli('sessions', withParams(pgBaseUrl, { schema: empty }))
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('is not a turnchart database: it has none of the turnchart_* tables')
  } finally {
    await dropSchemas(schema, empty)
  }
})
