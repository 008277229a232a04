// Time to first delta (issue 29): from the call that starts a turn (`engine.prompt`, or the
// doStream loop's first `doStream`) to the subscriber's first text delta, turnchart on a SQLite
// file against the bare doStream loop, interleaved round by round in one process, against the
// same scripted server (one step of 50 deltas, no tool). The session exists before the clock
// starts; the time includes what turnchart does before the model call (the prompt's
// transaction, the first transition's row) and the request itself.
//
//   firstDelta({ server, dir, rounds, log }) -> { rounds, deltas, times: { doStream: ms[], 'tc-file': ms[] } }
//   firstDeltaTargets(result) -> [{ target, measured, met }] (run.mjs's TargetResult)
//   renderFirstDelta(result) -> a Markdown section
//
// Standalone (after `npm run build`): node bench/first-delta.mjs [rounds]   (default 60)
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSystems } from './systems.mjs'
import { startServer, stepReply, stats, fmtMs, expectModelCalls } from './lib.mjs'

const SYSTEMS = ['doStream', 'tc-file']
const DELTAS = 50
const WARMUP = 5
const SLACK_MS = 1 // the target: turnchart's median ≤ the bare loop's + 1 ms

/** Interleaved rounds: each system starts a turn on a new session and records its first delta's time. */
export async function firstDelta({ server, dir, rounds = 60, log = () => {} }) {
  const systems = await createSystems({ baseURL: server.url, dir }, SYSTEMS)
  const times = Object.fromEntries(SYSTEMS.map((id) => [id, []]))
  try {
    for (let round = 0; round < WARMUP + rounds; round++) {
      for (const s of systems) {
        const lane = `ttfd-${s.id}-${round}`
        await server.fill(lane, [stepReply({ deltas: DELTAS, toolCall: false })])
        const session = await s.newSession(lane)
        let first
        let count = 0
        const t0 = performance.now()
        await s.turn(session, `lane:${lane} say something`, () => {
          if (count++ === 0) first = performance.now()
        })
        if (count !== DELTAS) throw new Error(`${s.short}: ${count} deltas, expected ${DELTAS}`)
        await expectModelCalls(server, { workload: 'time to first delta', system: s.short, lane, expected: 1, drop: true })
        if (round >= WARMUP) times[s.id].push(first - t0)
      }
    }
  } finally {
    for (const s of systems) await s.close()
  }
  const result = { rounds, warmup: WARMUP, deltas: DELTAS, times }
  log(`time to first delta: doStream loop ${fmtMs(stats(times.doStream).median)} ms, turnchart file ${fmtMs(stats(times['tc-file']).median)} ms (median of ${rounds})`)
  return result
}

export function firstDeltaTargets(result) {
  const target = `turnchart file: time to first delta ≤ the doStream loop's + ${SLACK_MS} ms (median)`
  if (!result?.times) return [{ target, measured: 'not measured', met: null }]
  const tc = stats(result.times['tc-file']).median
  const ds = stats(result.times.doStream).median
  return [{ target, measured: `${tc >= ds ? '+' : '−'}${fmtMs(Math.abs(tc - ds))} ms (${fmtMs(tc)} ms / ${fmtMs(ds)} ms)`, met: tc <= ds + SLACK_MS, value: tc - ds, limit: { max: SLACK_MS }, unit: 'ms' }]
}

export function renderFirstDelta(result) {
  if (!result?.times) return ''
  const lines = []
  const p = (s = '') => lines.push(s)
  p('## Time to first delta')
  p()
  p(`From the call that starts a turn (\`engine.prompt\`; the doStream loop's \`doStream\`) to the subscriber's first text delta, on a session created before the clock starts; one step of ${result.deltas} deltas, no tool. The two systems run interleaved round by round in one process, ${result.warmup} warm-up rounds, ${result.rounds} measured. turnchart's time includes the prompt's transaction (the session locked, the turn and the prompt stored, the first transition's row) and the request. Code: bench/first-delta.mjs.`)
  p()
  p('| system | median ms | min | p99 | max |')
  p('|---|---:|---:|---:|---:|')
  const names = { doStream: 'reference: hand loop over model.doStream', 'tc-file': 'turnchart, SQLite file (WAL)' }
  for (const id of SYSTEMS) {
    const s = stats(result.times[id])
    p(`| ${names[id]} | ${fmtMs(s.median)} | ${fmtMs(s.min)} | ${fmtMs(s.p99)} | ${fmtMs(s.max)} |`)
  }
  p()
  for (const t of firstDeltaTargets(result)) p(`Target: ${t.target}. Measured: **${t.measured}** — ${t.met ? 'met' : '**missed**'}.`)
  p()
  return lines.join('\n')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-ttfd-'))
  const server = await startServer()
  try {
    const result = await firstDelta({ server, dir, rounds: Number(process.argv[2] ?? 60), log: console.error })
    console.log(renderFirstDelta(result))
  } finally {
    server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
