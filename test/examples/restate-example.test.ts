/**
 * `npm run example:restate` (examples/restate/approval.ts) on Node 22: a turn with an approval run
 * on a local restate-server it starts itself, approved through Restate's ingress; it prints the
 * wait and the turn's outcome.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { testNeeding } from '../support/requires'
import { node22, restate } from '../support/restate'

jest.setTimeout(120_000)
const root = path.resolve(__dirname, '../..')

/** The example's temporary folders in the system's temporary directory. */
const leftFolders = () => fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('turnchart-restate-example-'))

testNeeding(restate)('the Restate example runs a turn with an approval to its end, in one command; three times in a row it exits 0 and leaves no folder behind', () => {
  const before = leftFolders()
  for (let i = 0; i < 3; i++) {
    const run = spawnSync(node22, ['-r', 'ts-node/register/transpile-only', 'examples/restate/approval.ts'], {
      cwd: root,
      env: { ...process.env, TURNCHART_BASE_URL: '', NODE_NO_WARNINGS: '1', RESTATE_LOGGING: 'ERROR' },
      encoding: 'utf8',
      timeout: 100_000,
    })
    expect(run.stderr).toBe('')
    expect(run.stdout).toMatch(/^turn trn_\w+ waits in awaiting-approval: approving call_refund through Restate's ingress\ncompleted: Refunded 40 on order A-17\.\n$/)
    expect(run.status).toBe(0)
  }
  expect(leftFolders().filter((name) => !before.includes(name))).toEqual([])
})
