/**
 * `npx turnchart …` in the repository, as a new user types it after `npm install`: npm runs the
 * package's own bin by installing the repository into its npx cache (a link) and linking its
 * bins there once. The bin (bin/turnchart.js) always exists: before a build it runs the
 * sources, after `npm run build` the build, through the same npx cache entry.
 *
 * The repository is copied (its files as git sees them, without dist/) into a temporary folder
 * that borrows this repository's node_modules; npm gets a cache folder of its own, so the npx
 * cache starts empty as on a new machine. The build is the run's (test/support/packed-package.ts:
 * `npm run build` by the clone's `prepack`, which test/package/pack.test.ts checks), copied in:
 * the suite builds the package once.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { createEngine } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { modelFor } from '../support/harness'
import { packedPackage } from '../support/packed-package'

jest.setTimeout(300_000)

const root = path.resolve(__dirname, '../..')
let work: string
let repo: string
let db: string
let sessionId: string

/** Without the npm_* variables of a surrounding `npm test`, with an npm cache of its own. */
function npmEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')))
  return { ...env, NO_COLOR: '1', npm_config_cache: path.join(work, 'npm-cache'), npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }
}

async function run(command: string, args: string[], cwd = repo) {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, { cwd, env: npmEnv(), encoding: 'utf8', timeout: 240_000 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
  }
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-npx-'))
  repo = path.join(work, 'repo')
  const { stdout } = await promisify(execFile)('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  for (const file of stdout.split('\0').filter(Boolean)) {
    const from = path.join(root, file)
    if (!fs.existsSync(from)) continue // deleted in the working tree, not yet in the index
    fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true })
    fs.copyFileSync(from, path.join(repo, file))
    fs.chmodSync(path.join(repo, file), fs.statSync(from).mode)
  }
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(repo, 'node_modules'), 'dir')

  const server = await startScriptedServer()
  db = path.join(work, 'agent.db')
  const engine = await createEngine({ database: db, model: modelFor(server) })
  try {
    const session = await engine.createSession({ title: 'from npx' })
    sessionId = session.id
    server.text('hello')
    await engine.prompt(session.id, 'hi').done
  } finally {
    await engine.close()
    await server.close()
  }
})

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true })
})

test('before any build: npx turnchart --help and npx turnchart sessions <db> run (from the sources)', async () => {
  expect(fs.existsSync(path.join(repo, 'dist'))).toBe(false)
  const help = await run('npx', ['turnchart', '--help'])
  expect(help).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage: turnchart <command>/) })
  const sessions = await run('npx', ['turnchart', 'sessions', db])
  expect(sessions.stderr).toBe('')
  expect(sessions.stdout).toMatch(new RegExp(`^${sessionId} .* 1 turns \\(completed\\)  from npx\\n$`))
  // From a subfolder too: npx finds the repository's package.json above it.
  const fromDocs = await run('npx', ['turnchart', '--version'], path.join(repo, 'docs'))
  expect(fromDocs).toMatchObject({ code: 0, stdout: `${require('../../package.json').version}\n` })
})

test('after npm run build, the same npx cache runs the build (the sources moved away)', async () => {
  const { clone } = await packedPackage()
  fs.cpSync(path.join(clone, 'dist'), path.join(repo, 'dist'), { recursive: true })
  expect(fs.existsSync(path.join(repo, 'dist/cjs/src/cli/main.js'))).toBe(true)
  fs.renameSync(path.join(repo, 'src'), path.join(repo, 'src-moved'))
  const help = await run('npx', ['turnchart', '--help'])
  expect(help).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage: turnchart <command>/) })
  const exec = await run('npm', ['exec', '--', 'turnchart', 'sessions', db, '--json'])
  expect(exec.code).toBe(0)
  expect(JSON.parse(exec.stdout).map((s: { id: string }) => s.id)).toEqual([sessionId])
})
