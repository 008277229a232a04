// Workload 1 (one 10-step turn per new session) for one system, to be run under --cpu-prof.
//   Forked by run.mjs (IPC): { id, baseURL, dir, lanes, warmup } -> { short, times, window, cpuMs }; the
//     lanes are filled (and their model calls checked) by run.mjs, on its scripted server.
//   By hand, with its own server (default: turnchart on a file, 30 turns):
//     node --cpu-prof --cpu-prof-dir=bench/out bench/profile.mjs [system] [turns]
//     node bench/profile-summary.mjs bench/out/<file>.cpuprofile
// `window` is [first, last] µs of CLOCK_MONOTONIC (the profile's clock) around the turns after
// warm-up, so the summary can leave out start-up; `cpuMs` is the process's user+system CPU in it.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createSystems } from './systems.mjs'
import { startServer, turnScript, stats, W1_SCRIPT } from './lib.mjs'

const nowUs = () => Number(process.hrtime.bigint() / 1000n)

async function runTurns({ id, baseURL, dir, lanes, warmup }) {
  const [system] = await createSystems({ baseURL, dir }, [id])
  const times = []
  let from
  let cpu0
  for (let i = 0; i < lanes.length; i++) {
    if (i === warmup) {
      from = nowUs()
      cpu0 = process.cpuUsage()
    }
    const session = await system.newSession(lanes[i])
    const t0 = performance.now()
    await system.turn(session, `lane:${lanes[i]} turn ${i}: fetch the ten documents`, () => {})
    times.push(performance.now() - t0)
  }
  const window = [from, nowUs()]
  const cpu = process.cpuUsage(cpu0)
  await system.close()
  return { short: system.short, times: times.slice(warmup), window, cpuMs: (cpu.user + cpu.system) / 1000 }
}

if (process.send) {
  process.once('message', async (task) => {
    process.send(await runTurns(task))
    process.disconnect() // exit, so --cpu-prof writes the profile
  })
} else {
  const [id = 'tc-file', turns = '30'] = process.argv.slice(2)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-profile-'))
  const server = await startServer()
  const lanes = []
  for (let i = 0; i < Number(turns); i++) {
    lanes.push(`p${i}`)
    await server.fill(`p${i}`, turnScript(W1_SCRIPT))
  }
  const { short, times } = await runTurns({ id, baseURL: server.url, dir, lanes, warmup: 3 })
  server.close()
  fs.rmSync(dir, { recursive: true, force: true })
  const s = stats(times)
  console.error(`${short}: median ${s.median.toFixed(1)} ms, min ${s.min.toFixed(1)}, max ${s.max.toFixed(1)} (${times.length} turns after 3 warm-up)`)
}
