// RSS per waiting turn, held and parked (issue 37): runs bench/parked-turns.cts once per mode, each
// in its own process (memory one mode freed is not handed back to the OS), and prints a table.
//   node bench/parked-turns.mjs [turns]      (default 1000)
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const turns = process.argv[2] ?? '1000'
const launcher = "require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } }); require(process.argv[1])"
const rows = ['held', 'parked'].map((mode) => {
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', launcher, path.join(here, 'parked-turns.cts')], {
    env: { ...process.env, PARKED_MODE: mode, PARKED_TURNS: turns },
    encoding: 'utf8',
  })
  return JSON.parse(out.trim().split('\n').at(-1))
})
console.log(`| waiting turns (${turns}) | RSS per turn | heap per turn | actors | timers | leases | time to wait |`)
console.log('|---|---|---|---|---|---|---|')
for (const r of rows) {
  console.log(`| ${r.mode} | ${r.rssPerTurnKB.toFixed(1)} KB | ${r.heapPerTurnKB.toFixed(1)} KB | ${r.actors} | ${r.timers} | ${r.leases} | ${r.seconds.toFixed(1)} s |`)
}
