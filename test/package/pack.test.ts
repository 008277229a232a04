/**
 * From a clean clone to an app: `git clone` the repository (its committed HEAD), `npm pack`
 * there (the `prepack` script builds dist/; made once per run, test/support/packed-package.ts),
 * and install the tarball into three fresh apps. The README app installs it with the README's
 * own install lines (the tarball in place of `turnchart`, the rest as printed, so today's `ai`,
 * provider, zod and @types/node) and its Example, copied from the README, passes `tsc --strict`
 * without skipLibCheck or `--types` on TypeScript 5.9 and on the current major, then runs. An ES
 * module app and a CommonJS app install it beside this repository's `ai` v6: each type-checks
 * under `moduleResolution` `node` (and the ES module app under `bundler` and, strict, under
 * node16) and runs a turn against the scripted server. The tarball holds no sources and its
 * source maps carry their sources; the clone's lockfile is what `npm install` would write.
 *
 * To stay fast, the apps install with --ignore-scripts and reuse the better-sqlite3 native
 * binding compiled for this repository when the versions match (compiling it from source takes
 * about two minutes here); otherwise, or with TURNCHART_PACK_FULL_INSTALL=1, the install runs
 * the install scripts as a user's would. The clone borrows this repository's node_modules to
 * build (its own `npm ci` is what .ci/run already exercises).
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
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
const apps = { esm: '', cjs: '', readme: '' }
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')

function run(command: string, args: string[], cwd: string, timeout = 240_000): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', timeout, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
}

const runAsync = (command: string, args: string[], cwd: string, timeout = 600_000) =>
  promisify(execFile)(command, args, { cwd, encoding: 'utf8', timeout, env: cleanEnv() })

const installFlags = ['--prefer-offline', '--no-audit', '--no-fund']
const fullInstall = process.env.TURNCHART_PACK_FULL_INSTALL === '1'

/** The README's install lines (its "## Install" block), each as a command's words. */
function readmeInstallLines(): string[][] {
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Install')))![1]
  return block.trim().split('\n').map((line) => line.trim().split(/\s+/))
}

/** Runs the lines in `app` as printed (npm and npx), `npm install` with the packed tarball in place of `turnchart`. */
async function install(app: string, lines: string[][]): Promise<void> {
  for (const [command, ...args] of lines) {
    expect(['npm', 'npx']).toContain(command)
    if (command === 'npm' && args[0] === 'install') {
      await runAsync('npm', [...args.map((arg) => (arg === 'turnchart' ? tarball : arg)), ...installFlags, ...(fullInstall ? [] : ['--ignore-scripts'])], app)
    } else await runAsync(command, args, app)
  }
}

/** better-sqlite3's binding, copied from this repository when the versions match, else built. */
async function provideBinding(app: string): Promise<void> {
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

async function makeApp(name: keyof typeof apps): Promise<string> {
  const app = path.join(work, `${name}-app`)
  fs.mkdirSync(app)
  if (name === 'readme') {
    // As a person starts one: an empty folder, `npm init -y` (a CommonJS package), then the README's lines in order.
    await runAsync('npm', ['init', '-y'], app)
    await install(app, readmeInstallLines())
    // Two compilers side by side (npm aliases), as an app pinning either would have it.
    await install(app, [['npm', 'install', '--save-dev', 'ts59@npm:typescript@5.9', 'ts-current@npm:typescript@latest']])
  } else {
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `${name}-app`, version: '1.0.0', private: true, type: name === 'cjs' ? 'commonjs' : 'module' }))
    // turnchart beside this repository's `ai` and provider (peers of turnchart), and, in the ES
    // module app, the README's second line, for its strict check.
    const peers = ['ai', '@ai-sdk/openai-compatible'].map((peer) => `${peer}@${repoPackage.devDependencies[peer]}`)
    await install(app, [['npm', 'install', 'turnchart', ...peers], ...(name === 'esm' ? readmeInstallLines().filter((line) => line.includes('@types/node')) : [])])
  }
  if (!fullInstall) await provideBinding(app)
  return app
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-pack-'))
  const packed = await packedPackage()
  expect(packed.output).toContain('built dist/cjs and dist/esm')
  ;({ clone, tarball, files } = packed)
  ;[apps.esm, apps.cjs, apps.readme] = await Promise.all([makeApp('esm'), makeApp('cjs'), makeApp('readme')])
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
  expect(installed.peerDependenciesMeta).toEqual({ '@ai-sdk/mcp': { optional: true }, '@ai-sdk/openai-compatible': { optional: true }, '@opentelemetry/api': { optional: true }, '@restatedev/restate-sdk': { optional: true }, '@statelyai/inspect': { optional: true }, pg: { optional: true } })
  expect(installed.peerDependencies.ai).toBe('^6.0.0 || ^7.0.0')
  expect(Object.keys(installed.dependencies).sort()).toEqual(['@types/json-schema', 'ajv', 'croner', 'kysely', 'xstate'])
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
  "import { HostedTurns, type TurnHost } from 'turnchart/host'",
  'export const f: (o: EngineOptions) => Promise<Engine> = createEngine',
  'export const open: (o: EngineOptions, host: TurnHost) => Promise<HostedTurns> = (o, host) => HostedTurns.open(o, host)',
  'export const g: () => Promise<ScriptedServer> = startScriptedServer',
  "export const h: boolean = StorageError.isInstance(new Error('x'))",
  '',
].join('\n')

const repoTsc = path.join(root, 'node_modules/typescript/bin/tsc')

/** Runs the TypeScript `compiler` in `app`; returns its output, '' when it passes. */
function compile(app: string, compiler: string, args: string[]): string {
  try {
    run(process.execPath, [compiler, ...args], app, 120_000)
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout || error)
  }
}

/** Type-checks `file` (written with `typeCheck`) in an ai v6 app, with skipLibCheck. */
function tsc(app: string, file: string, module: string, resolution: string): string {
  fs.writeFileSync(path.join(app, file), typeCheck)
  return compile(app, repoTsc, ['--noEmit', '--strict', '--skipLibCheck', '--esModuleInterop', '--module', module, '--moduleResolution', resolution, '--types', 'node', '--typeRoots', path.join(root, 'node_modules/@types'), file])
}

const globalTypes = (app: string) => fs.readdirSync(path.join(app, 'node_modules/@types')).sort()
const readmeExample = () => /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Example')))![1]

/**
 * A tsconfig.json for Node in `app`: with `strict` and without `skipLibCheck` (`base`: every
 * declaration the app installed is checked, the global types as the compiler finds them by
 * default), or `tsc --init`'s own file as that compiler writes it, set up for Node as its comments
 * say (stricter checks of the app's code: `exactOptionalPropertyTypes`,
 * `noUncheckedIndexedAccess`, `verbatimModuleSyntax`; it sets skipLibCheck, which xstate's and the
 * AI SDK's declarations need under those flags). TypeScript 6 and later include no global types
 * unless `types` names them, so both name "node" there, as docs/stores.md says.
 */
function writeTsconfig(app: string, compiler: string, kind: 'base' | 'init'): string {
  const major = Number(/^Version (\d+)\./.exec(run(process.execPath, [compiler, '--version'], app))![1])
  fs.rmSync(path.join(app, 'tsconfig.json'), { force: true })
  if (kind === 'base') {
    const types = major >= 6 ? { types: ['node'] } : {}
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'nodenext', ...types }, include: ['*.ts'] }, null, 2))
  } else {
    run(process.execPath, [compiler, '--init'], app)
    const generated = fs.readFileSync(path.join(app, 'tsconfig.json'), 'utf8')
    const forNode = generated.replace(/"types": \[\],\n/, '').replace(/\/\/ ("lib": \["esnext"\],)/, '$1').replace(/\/\/ ("types": \["node"\],)/, '$1')
    expect(forNode).toMatch(/^\s*"types": \["node"\],$/m)
    fs.writeFileSync(path.join(app, 'tsconfig.json'), forNode)
  }
  return fs.readFileSync(path.join(app, 'tsconfig.json'), 'utf8')
}

const compilers = [
  ['5.9', 'ts59'],
  ['the current major', 'ts-current'],
] as const

test("a new app made as the README says (npm init -y, the Install block's lines in order, the Example as index.ts) compiles with npx tsc (what npx tsc --noEmit checks, and its output) and node index.js completes; tsc --init of TypeScript 5.9 with the same flag passes too", () => {
  const app = apps.readme
  expect(JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')).type).toBe('module')
  const tsconfig = path.join(app, 'tsconfig.json')
  expect(fs.existsSync(tsconfig)).toBe(true)
  fs.writeFileSync(path.join(app, 'index.ts'), readmeExample())
  const npx = (args: string[]) => {
    try {
      run('npx', args, app, 120_000)
      return ''
    } catch (error) {
      return String((error as { stdout?: string }).stdout || error)
    }
  }
  // (`npx tsc` reports what `npx tsc --noEmit` would, then emits: one compile, not two)
  expect(npx(['tsc'])).toBe('')
  const child = spawnSync(process.execPath, ['index.js'], { cwd: app, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 })
  expect(child.stderr).toMatch(/\ncompleted, \d+ tokens in, \d+ out\n$/)
  expect(child.stdout).toBe('Let me look. The folder holds your project.')
  // TypeScript 5.9's own --init, with the README's flag
  const ts59 = path.join(app, 'node_modules/ts59/bin/tsc')
  fs.rmSync(tsconfig)
  run(process.execPath, [ts59, '--init', '--types', 'node'], app)
  expect(compile(app, ts59, ['--noEmit'])).toBe('')
  // (what it emitted and wrote goes: the tests below write their own configs and files)
  for (const file of fs.readdirSync(app)) if (/^index\.(js|d\.ts|js\.map|d\.ts\.map|ts)$/.test(file) || file === 'tsconfig.json') fs.rmSync(path.join(app, file))
})

test.each(compilers)("the README's Example, in an app installed with the README's lines, passes tsc --strict without skipLibCheck on TypeScript %s", (_version, alias) => {
  const app = apps.readme
  const compiler = path.join(app, 'node_modules', alias, 'bin/tsc')
  const version = run(process.execPath, [compiler, '--version'], app)
  if (alias === 'ts59') expect(version).toMatch(/^Version 5\.9\./)
  else expect(Number(/^Version (\d+)\./.exec(version)![1])).toBeGreaterThanOrEqual(7)
  // What the README's lines brought: @types/node and the AI SDK's json-schema types, nothing of this repository's.
  expect(globalTypes(app)).toEqual(['json-schema', 'node'])
  fs.writeFileSync(path.join(app, 'example.ts'), readmeExample())
  fs.writeFileSync(path.join(app, 'check.ts'), typeCheck)
  expect(writeTsconfig(app, compiler, 'base')).not.toContain('skipLibCheck')
  expect(compile(app, compiler, ['-p', 'tsconfig.json', '--noEmit'])).toBe('')
  writeTsconfig(app, compiler, 'init')
  expect(compile(app, compiler, ['-p', 'tsconfig.json', '--noEmit'])).toBe('')
})

// Under moduleResolution `node` (node10) the AI SDK's own declarations do not resolve without
// skipLibCheck (`eventsource-parser/stream`), so these apps use the resolutions that do.
// One program for both entries (an app's ES module and its CommonJS module: under node16 a
// `.cts` file is CommonJS in any package), so the libraries' declarations are checked once (each
// such check takes about 17 s).
test('on ai v6, both entries type-check under moduleResolution node16 with strict and without skipLibCheck (an ES module and a CommonJS file of one app), with the README\'s @types/node and without @types/better-sqlite3 or @types/pg', () => {
  for (const app of [apps.esm, apps.cjs]) for (const types of ['better-sqlite3', 'pg']) expect(fs.existsSync(path.join(app, 'node_modules/@types', types))).toBe(false)
  for (const file of ['check-strict-esm.ts', 'check-strict-cjs.cts']) fs.writeFileSync(path.join(apps.esm, file), typeCheck)
  expect(compile(apps.esm, repoTsc, ['--noEmit', '--strict', '--target', 'ES2022', '--module', 'node16', '--moduleResolution', 'node16', 'check-strict-esm.ts', 'check-strict-cjs.cts'])).toBe('')
})

test('the shipped declarations import only dependencies, the required peer `ai` and Node built-ins (never an optional package, but the Restate SDK in turnchart/restate\'s own)', () => {
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
      // turnchart/restate is the Restate SDK's object: an app that imports that entry installs the SDK.
      if (name === '@restatedev/restate-sdk' && file.startsWith('dist/cjs/src/restate/')) continue
      if (!allowed.has(name)) imported.set(name, file)
    }
  }
  expect(Object.fromEntries(imported)).toEqual({})
  expect(allowed).toEqual(new Set(['@types/json-schema', 'ajv', 'croner', 'kysely', 'xstate', 'ai']))
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
