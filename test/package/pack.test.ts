/**
 * From a clean clone to an app: `git clone` the repository (its committed HEAD), `npm pack`
 * there (the `prepack` script builds dist/; made once per run, test/support/packed-package.ts),
 * and install the tarball into a fresh ES module
 * app and a fresh CommonJS app. Each type-checks under `moduleResolution` `node` (and the ES
 * module app under `bundler`), both entries type-check under `node16` in one strict program
 * without skipLibCheck, and each app runs a turn against the scripted server. The
 * tarball holds no sources and its source maps carry their sources; the clone's lockfile is
 * what `npm install` would write.
 *
 * To stay fast, the apps install with --ignore-scripts and reuse the better-sqlite3 native
 * binding compiled for this repository when the versions match (compiling it from source takes
 * about two minutes here); otherwise, or with TURNCHART_PACK_FULL_INSTALL=1, the install runs
 * the install scripts as a user's would. The clone borrows this repository's node_modules to
 * build (its own `npm ci` is what .ci/run already exercises).
 */
import { execFile, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { cleanEnv, packedPackage } from '../support/packed-package'

const root = path.resolve(__dirname, '../..')
const repoPackage = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
let work: string
let clone: string
let tarball: string
let files: string[]
const apps = { esm: '', cjs: '' }

function run(command: string, args: string[], cwd: string, timeout = 240_000): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', timeout, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
}

const runAsync = (command: string, args: string[], cwd: string, timeout = 600_000) =>
  promisify(execFile)(command, args, { cwd, encoding: 'utf8', timeout, env: cleanEnv() })

async function makeApp(name: 'esm' | 'cjs'): Promise<string> {
  const app = path.join(work, `${name}-app`)
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `${name}-app`, version: '1.0.0', private: true, type: name === 'esm' ? 'module' : 'commonjs' }))
  const full = process.env.TURNCHART_PACK_FULL_INSTALL === '1'
  // As an app does: turnchart, plus `ai` and a provider of the app's major (peers of turnchart).
  const peers = ['ai', '@ai-sdk/openai-compatible'].map((name) => `${name}@${repoPackage.devDependencies[name]}`)
  // Nothing else: the AI SDK's declarations import 'json-schema', whose types turnchart brings
  // (a dependency), so `tsc` without skipLibCheck passes after the README's install line alone.
  await runAsync('npm', ['install', tarball, ...peers, '--prefer-offline', '--no-audit', '--no-fund', ...(full ? [] : ['--ignore-scripts'])], app)
  if (!full) {
    const binding = 'build/Release/better_sqlite3.node'
    const ours = path.join(root, 'node_modules/better-sqlite3')
    const theirs = path.join(app, 'node_modules/better-sqlite3')
    const version = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version
    if (fs.existsSync(path.join(ours, binding)) && version(ours) === version(theirs)) {
      fs.mkdirSync(path.dirname(path.join(theirs, binding)), { recursive: true })
      fs.copyFileSync(path.join(ours, binding), path.join(theirs, binding))
    } else {
      await runAsync('npm', ['rebuild', 'better-sqlite3'], app)
    }
  }
  return app
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-pack-'))
  const packed = await packedPackage()
  expect(packed.output).toContain('built dist/cjs and dist/esm')
  ;({ clone, tarball, files } = packed)
  ;[apps.esm, apps.cjs] = await Promise.all([makeApp('esm'), makeApp('cjs')])
  fs.copyFileSync(path.join(__dirname, 'esm-smoke.mjs'), path.join(apps.esm, 'smoke.js'))
  fs.copyFileSync(path.join(__dirname, 'cjs-smoke.cjs'), path.join(apps.cjs, 'smoke.js'))
}, 900_000)

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true })
})

test('npm pack in a fresh clone builds (prepack): the tarball holds both entries, their types, the CLI, the docs, the license, and no sources', () => {
  expect(files).toEqual(
    expect.arrayContaining([
      'package.json',
      'README.md',
      'LICENSE',
      'bin/turnchart.js',
      'dist/esm/index.mjs',
      'dist/esm/index.d.mts',
      'dist/esm/testing.mjs',
      'dist/esm/testing.d.mts',
      'dist/cjs/src/index.js',
      'dist/cjs/src/index.d.ts',
      'dist/cjs/src/testing/index.js',
      'dist/cjs/src/testing/index.d.ts',
      'dist/cjs/src/cli/main.js',
      'dist/cjs/src/viewer/viewer-page.html',
      'dist/cjs/machines/turn.machine.js',
      'docs/architecture.md',
      'docs/viewer.md',
    ]),
  )
  expect(files.filter((f) => /^(src|test|machines|scripts|bench)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([])
  // The docs' screenshots stay in the repository.
  expect(files.filter((f) => f.startsWith('docs/images/'))).toEqual([])
})

test('every shipped source map carries its sources (sourcesContent), so no map points at an unshipped file', () => {
  const maps = files.filter((f) => f.endsWith('.map'))
  const pkg = path.join(apps.cjs, 'node_modules/turnchart')
  const incomplete = maps.filter((f) => {
    const map = JSON.parse(fs.readFileSync(path.join(pkg, f), 'utf8'))
    return !Array.isArray(map.sourcesContent) || map.sourcesContent.length !== map.sources.length || map.sourcesContent.some((s: unknown) => typeof s !== 'string')
  })
  expect(incomplete).toEqual([])
})

test("the clone's package-lock.json is what npm install writes (unchanged)", () => {
  const before = fs.readFileSync(path.join(clone, 'package-lock.json'), 'utf8')
  run('npm', ['install', '--package-lock-only', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], clone, 300_000)
  expect(fs.readFileSync(path.join(clone, 'package-lock.json'), 'utf8')).toBe(before)
})

test('the installed package.json: engines, bin, optional native driver, and optional peers that are not installed', () => {
  const installed = JSON.parse(fs.readFileSync(path.join(apps.cjs, 'node_modules/turnchart/package.json'), 'utf8'))
  expect(installed.engines).toEqual({ node: '>=20' })
  expect(installed.bin).toEqual({ turnchart: './bin/turnchart.js' })
  expect(installed.license).toBe('MIT')
  expect(fs.readFileSync(path.join(apps.cjs, 'node_modules/turnchart/LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} turnchart contributors\n/)
  expect(installed.peerDependenciesMeta).toEqual({ '@ai-sdk/mcp': { optional: true }, '@ai-sdk/openai-compatible': { optional: true }, '@opentelemetry/api': { optional: true }, '@statelyai/inspect': { optional: true }, pg: { optional: true } })
  expect(installed.peerDependencies.ai).toBe('^6.0.0 || ^7.0.0')
  expect(Object.keys(installed.dependencies).sort()).toEqual(['@types/json-schema', 'ajv', 'kysely', 'xstate'])
  expect(Object.keys(installed.optionalDependencies)).toEqual(['better-sqlite3'])
  // One copy of `ai`: the app's.
  const copies = run('npm', ['ls', 'ai', '--all', '--parseable'], apps.cjs).trim().split('\n').filter(Boolean)
  expect(copies).toEqual([path.join(apps.cjs, 'node_modules/ai')])
  expect(fs.existsSync(path.join(apps.cjs, 'node_modules/better-sqlite3'))).toBe(true)
  expect(fs.existsSync(path.join(apps.cjs, 'node_modules/@statelyai/inspect'))).toBe(false)
  expect(fs.existsSync(path.join(apps.cjs, 'node_modules/pg'))).toBe(false)
})

test.each([
  ['an ES module app (import)', 'esm', 'hello from esm'],
  ['a CommonJS app (require)', 'cjs', 'hello from cjs'],
] as const)('runs a turn in %s', (_kind, app, text) => {
  const out = run(process.execPath, ['smoke.js'], apps[app], 60_000)
  expect(JSON.parse(out.trim())).toEqual({ outcome: 'completed', text, errorValue: true, rerun: text })
})

const typeCheck = [
  "import { createEngine, StorageError, type Engine, type EngineOptions } from 'turnchart'",
  "import { startScriptedServer, type ScriptedServer } from 'turnchart/testing'",
  'export const f: (o: EngineOptions) => Promise<Engine> = createEngine',
  'export const g: () => Promise<ScriptedServer> = startScriptedServer',
  "export const h: boolean = StorageError.isInstance(new Error('x'))",
  '',
].join('\n')

/** Type-checks `file` (written with `typeCheck`) in an app; returns tsc's output, '' when clean. */
function tsc(app: string, file: string, module: string, resolution: string): string {
  fs.writeFileSync(path.join(app, file), typeCheck)
  const bin = path.join(root, 'node_modules/typescript/bin/tsc')
  const flags = ['--noEmit', '--strict', '--skipLibCheck', '--esModuleInterop', '--module', module, '--moduleResolution', resolution, '--types', 'node', '--typeRoots', path.join(root, 'node_modules/@types')]
  try {
    run(process.execPath, [bin, ...flags, file], app, 120_000)
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout || error)
  }
}

/**
 * Type-checks `files` as an app compiled with `strict` and without `skipLibCheck` (tsc's
 * default) would: every declaration turnchart ships is checked, with @types/node as the only
 * global types (not this repository's @types/better-sqlite3 or @types/pg).
 */
function tscStrict(app: string, files: string[], module: string, resolution: string): string {
  for (const file of files) fs.writeFileSync(path.join(app, file), typeCheck)
  const typeRoots = path.join(work, 'type-roots')
  if (!fs.existsSync(typeRoots)) {
    fs.mkdirSync(typeRoots)
    fs.symlinkSync(path.join(root, 'node_modules/@types/node'), path.join(typeRoots, 'node'), 'dir')
  }
  const bin = path.join(root, 'node_modules/typescript/bin/tsc')
  const flags = ['--noEmit', '--strict', '--target', 'ES2022', '--esModuleInterop', '--module', module, '--moduleResolution', resolution, '--types', 'node', '--typeRoots', typeRoots]
  try {
    run(process.execPath, [bin, ...flags, ...files], app, 120_000)
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout || error)
  }
}

// Under moduleResolution `node` (node10) the AI SDK's own declarations do not resolve without
// skipLibCheck (`eventsource-parser/stream`), so these apps use the resolutions that do.
// One program for both entries (an app's ES module and its CommonJS module: under node16 a
// `.cts` file is CommonJS in any package), so the libraries' declarations are checked once (each
// such check takes about 17 s). It covers the two apps' node16 checks with skipLibCheck below.
test('both entries type-check under moduleResolution node16 with strict and without skipLibCheck (an ES module and a CommonJS file of one app), without @types/better-sqlite3 or @types/pg', () => {
  for (const app of [apps.esm, apps.cjs]) for (const types of ['better-sqlite3', 'pg']) expect(fs.existsSync(path.join(app, 'node_modules/@types', types))).toBe(false)
  expect(tscStrict(apps.esm, ['check-strict-esm.ts', 'check-strict-cjs.cts'], 'node16', 'node16')).toBe('')
})

test('the shipped declarations import only dependencies, the required peer `ai` and Node built-ins (never an optional package)', () => {
  const installed = JSON.parse(fs.readFileSync(path.join(apps.cjs, 'node_modules/turnchart/package.json'), 'utf8'))
  const optionalPeers = Object.keys(installed.peerDependenciesMeta).filter((name) => installed.peerDependenciesMeta[name].optional)
  const allowed = new Set([...Object.keys(installed.dependencies), ...Object.keys(installed.peerDependencies).filter((name) => !optionalPeers.includes(name))])
  const imported = new Map<string, string>()
  for (const file of files.filter((f) => /\.d\.m?ts$/.test(f))) {
    const text = fs.readFileSync(path.join(apps.cjs, 'node_modules/turnchart', file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '')
    const specifiers = /(?<![\w'"])(?:from\s+|import\s*\(\s*|require\s*\(\s*|<reference\s+types=)['"]([^'"]+)['"]/g
    for (const match of text.matchAll(specifiers)) {
      const specifier = match[1]
      if (specifier.startsWith('.') || specifier.startsWith('node:') || specifier === 'node') continue
      const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]
      if (!allowed.has(name)) imported.set(name, file)
    }
  }
  expect(Object.fromEntries(imported)).toEqual({})
  expect(allowed).toEqual(new Set(['@types/json-schema', 'ajv', 'kysely', 'xstate', 'ai']))
})

test.each([
  ['esm', 'node', 'commonjs'],
  ['esm', 'bundler', 'esnext'],
  ['cjs', 'node', 'commonjs'],
] as const)('the %s app type-checks both entries under moduleResolution %s', (app, resolution, module) => {
  expect(tsc(apps[app], `check-${resolution}.ts`, module, resolution)).toBe('')
})

test("the bin's viewer serves its built page (the chart laid out, the script bundled) with nothing but the package", async () => {
  const db = path.join(work, 'view.db')
  run(path.join(apps.cjs, 'node_modules/.bin/turnchart'), ['demo', '--db', db], apps.cjs, 60_000)
  const child = spawn(path.join(apps.cjs, 'node_modules/.bin/turnchart'), ['view', db], { cwd: apps.cjs, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (chunk) => {
        out += chunk
        const match = /open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)
        if (match) resolve(match[1])
      })
      child.on('exit', () => reject(new Error(`view exited: ${out}`)))
    })
    const page = await (await fetch(url)).text()
    const drawing = JSON.parse(/<script type="application\/json" id="chart-drawing">(.*?)<\/script>/s.exec(page)![1])
    expect(drawing.boxes.map((b: { id: string }) => b.id)).toContain('compaction-retry-waiting')
    expect(page).toMatch(/<script>.{1000,}<\/script>/s)
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
})

test('the bin runs: --version, turnchart chart, and the demo', () => {
  const bin = path.join(apps.cjs, 'node_modules/.bin/turnchart')
  expect(run(bin, ['--version'], apps.cjs, 30_000)).toBe(`${repoPackage.version}\n`)
  expect(run(bin, ['chart'], apps.cjs, 30_000)).toMatch(/^stateDiagram-v2\n/)
  const db = path.join(work, 'demo.db')
  const out = run(bin, ['demo', '--db', db], apps.cjs, 60_000)
  expect(out.match(/^turn trn_\S+: (\w+)/gm)?.map((l) => l.split(': ')[1])).toEqual(['completed', 'completed', 'completed', 'aborted'])
  expect(run(bin, ['sessions', db], apps.cjs, 30_000)).toMatch(/^ses_\S+ .* 4 turns \(completed, completed, completed, aborted\)/)
})
