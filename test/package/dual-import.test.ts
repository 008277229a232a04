/**
 * The built package can be imported from an ES module and from a CommonJS program, and runs
 * a turn from each (through the package's own `exports`, by self-reference). The build is the
 * run's packed clone (test/support/packed-package.ts), not the checkout's dist/.
 */
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { packedPackage } from '../support/packed-package'

let clone: string

beforeAll(async () => {
  ;({ clone } = await packedPackage())
}, 600_000)

test.each([
  ['an ES module', 'esm-smoke.mjs', 'hello from esm'],
  ['a CommonJS program', 'cjs-smoke.cjs', 'hello from cjs'],
])('runs a turn from %s', (_kind, file, text) => {
  const out = execFileSync(process.execPath, [path.join(clone, 'test/package', file)], { cwd: clone, encoding: 'utf8', timeout: 60_000 })
  expect(JSON.parse(out.trim())).toEqual({ outcome: 'completed', text, errorValue: true, rerun: text })
})
