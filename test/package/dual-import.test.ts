/**
 * The built package can be imported from an ES module and from a CommonJS program, and runs
 * a turn from each (through the package's own `exports`, by self-reference).
 */
import { execFileSync } from 'node:child_process'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

beforeAll(() => {
  execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'pipe' })
}, 120_000)

test.each([
  ['an ES module', 'esm-smoke.mjs', 'hello from esm'],
  ['a CommonJS program', 'cjs-smoke.cjs', 'hello from cjs'],
])('runs a turn from %s', (_kind, file, text) => {
  const out = execFileSync(process.execPath, [path.join(__dirname, file)], { cwd: root, encoding: 'utf8', timeout: 60_000 })
  expect(JSON.parse(out.trim())).toEqual({ outcome: 'completed', text, errorValue: true, rerun: text })
})
