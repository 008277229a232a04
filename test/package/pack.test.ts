/**
 * The packed tarball, installed into a fresh project with its dependencies: imported as an
 * ES module and as CommonJS (each runs a turn), typed under `nodenext` for both, its `bin`
 * runs the demo, and the optional peers (@statelyai/inspect, pg) are not installed.
 *
 * To stay fast, the tarball's dependencies are installed with --ignore-scripts and the
 * better-sqlite3 native binding compiled for this repository is reused when the versions
 * match (compiling it from source takes about two minutes here); otherwise, or with
 * TURNCHART_PACK_FULL_INSTALL=1, the install runs the install scripts as a user's would.
 * The package is built in a copy of the sources, so this test does not race
 * test/package/dual-import.test.ts, which rebuilds dist/ in place.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')
const repoPackage = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
let work: string
let app: string
let tarball: string
let files: string[]

/** Without the npm_* variables of a surrounding `npm test`, which would steer the inner npm. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')))
}

function run(command: string, args: string[], cwd: string, timeout = 240_000): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', timeout, env: { ...cleanEnv(), NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
}

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-pack-'))
  const pkg = path.join(work, 'pkg')
  fs.mkdirSync(pkg)
  for (const entry of ['package.json', 'README.md', 'docs', 'src', 'machines', 'scripts', 'tsconfig.json', 'tsconfig.build.json']) {
    if (fs.existsSync(path.join(root, entry))) fs.cpSync(path.join(root, entry), path.join(pkg, entry), { recursive: true })
  }
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'), 'dir')
  run(process.execPath, ['scripts/build.mjs'], pkg)
  const packed = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], pkg))
  tarball = path.join(work, packed[0].filename)
  files = packed[0].files.map((f: { path: string }) => f.path)

  app = path.join(work, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
  const full = process.env.TURNCHART_PACK_FULL_INSTALL === '1'
  // As an app does: turnchart, plus `ai` and a provider of the app's major (peers of turnchart).
  const peers = ['ai', '@ai-sdk/openai-compatible'].map((name) => `${name}@${repoPackage.devDependencies[name]}`)
  run('npm', ['install', tarball, ...peers, '--prefer-offline', '--no-audit', '--no-fund', ...(full ? [] : ['--ignore-scripts'])], app, 600_000)
  if (!full) {
    const binding = 'build/Release/better_sqlite3.node'
    const ours = path.join(root, 'node_modules/better-sqlite3')
    const theirs = path.join(app, 'node_modules/better-sqlite3')
    const version = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version
    if (fs.existsSync(path.join(ours, binding)) && version(ours) === version(theirs)) {
      fs.mkdirSync(path.dirname(path.join(theirs, binding)), { recursive: true })
      fs.copyFileSync(path.join(ours, binding), path.join(theirs, binding))
    } else {
      run('npm', ['rebuild', 'better-sqlite3'], app, 600_000)
    }
  }
  for (const smoke of ['esm-smoke.mjs', 'cjs-smoke.cjs']) fs.copyFileSync(path.join(__dirname, smoke), path.join(app, smoke))
}, 900_000)

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true })
})

test('the tarball holds the ESM and CommonJS entries, their types, the CLI and the docs, and no sources or tests', () => {
  expect(files).toEqual(
    expect.arrayContaining([
      'package.json',
      'README.md',
      'dist/esm/index.mjs',
      'dist/esm/index.d.mts',
      'dist/esm/testing.mjs',
      'dist/esm/testing.d.mts',
      'dist/cjs/src/index.js',
      'dist/cjs/src/index.d.ts',
      'dist/cjs/src/testing/index.js',
      'dist/cjs/src/testing/index.d.ts',
      'dist/cjs/src/cli/main.js',
      'dist/cjs/machines/turn.machine.js',
      'docs/architecture.md',
    ]),
  )
  expect(files.filter((f) => /^(src|test|machines|scripts|bench)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([])
})

test('the installed package.json: engines, bin, and optional peers that are not installed', () => {
  const installed = JSON.parse(fs.readFileSync(path.join(app, 'node_modules/turnchart/package.json'), 'utf8'))
  expect(installed.engines).toEqual({ node: '>=20' })
  expect(installed.bin).toEqual({ turnchart: './dist/cjs/src/cli/main.js' })
  expect(installed.peerDependenciesMeta).toEqual({ '@ai-sdk/openai-compatible': { optional: true }, '@opentelemetry/api': { optional: true }, '@statelyai/inspect': { optional: true }, pg: { optional: true } })
  expect(installed.peerDependencies.ai).toBe('^6.0.0 || ^7.0.0')
  expect(Object.keys(installed.dependencies).sort()).toEqual(['ajv', 'better-sqlite3', 'kysely', 'xstate'])
  // One copy of `ai`: the app's.
  const copies = run('npm', ['ls', 'ai', '--all', '--parseable'], app).trim().split('\n').filter(Boolean)
  expect(copies).toEqual([path.join(app, 'node_modules/ai')])
  expect(fs.existsSync(path.join(app, 'node_modules/@statelyai/inspect'))).toBe(false)
  expect(fs.existsSync(path.join(app, 'node_modules/pg'))).toBe(false)
})

test.each([
  ['an ES module (import)', 'esm-smoke.mjs', 'hello from esm'],
  ['a CommonJS program (require)', 'cjs-smoke.cjs', 'hello from cjs'],
])('runs a turn from %s', (_kind, file, text) => {
  const out = run(process.execPath, [file], app, 60_000)
  expect(JSON.parse(out.trim())).toEqual({ outcome: 'completed', text, errorValue: true })
})

const typeCheck = [
  "import { createEngine, type Engine, type EngineOptions } from 'turnchart'",
  "import { startScriptedServer, type ScriptedServer } from 'turnchart/testing'",
  'export const f: (o: EngineOptions) => Promise<Engine> = createEngine',
  'export const g: () => Promise<ScriptedServer> = startScriptedServer',
  '',
].join('\n')

/** Type-checks `file` (written with `typeCheck`) in the app; returns tsc's output, '' when clean. */
function tsc(file: string, module: string, resolution: string): string {
  fs.writeFileSync(path.join(app, file), typeCheck)
  const bin = path.join(root, 'node_modules/typescript/bin/tsc')
  const flags = ['--noEmit', '--strict', '--skipLibCheck', '--module', module, '--moduleResolution', resolution, '--types', 'node', '--typeRoots', path.join(root, 'node_modules/@types')]
  try {
    run(process.execPath, [bin, ...flags, file], app, 120_000)
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout || error)
  }
}

test('the types resolve for require (nodenext, .cts) and for import under a bundler', () => {
  expect(tsc('check-cjs.cts', 'nodenext', 'nodenext')).toBe('')
  expect(tsc('check-bundler.mts', 'esnext', 'bundler')).toBe('')
})

// dist/esm/*.d.mts must re-export with the '.js' extension, or `moduleResolution: nodenext`
// does not resolve the types for an ES module.
test('the types resolve for import (nodenext, .mts)', () => {
  expect(tsc('check-esm.mts', 'nodenext', 'nodenext')).toBe('')
})

test('the bin runs: turnchart chart, and the demo without dev dependencies', () => {
  const bin = path.join(app, 'node_modules/.bin/turnchart')
  expect(run(bin, ['chart'], app, 30_000)).toMatch(/^stateDiagram-v2\n/)
  const db = path.join(work, 'demo.db')
  const out = run(bin, ['demo', '--db', db], app, 30_000)
  expect(out.match(/^turn trn_\S+: (\w+)/gm)?.map((l) => l.split(': ')[1])).toEqual(['completed', 'completed', 'aborted'])
  expect(fs.existsSync(db)).toBe(true)
})
