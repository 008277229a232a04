// Quick A/B on workload 1: systems interleaved in one process, median ms per turn and the
// ratio to the first system. For working on the engine; `npm run bench` is the full run.
//   node bench/compare.mjs [rounds] [system ...]     (default: 20 doStream tc-file)
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createSystems } from './systems.mjs'
import { startServer, turnScript, stats } from './lib.mjs'

const [rounds = '20', ...ids] = process.argv.slice(2)
const names = ids.length ? ids : ['doStream', 'tc-file']
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-compare-'))
const server = await startServer()
const systems = await createSystems({ baseURL: server.url, dir }, names)
for (const s of systems) await s.init?.()
const script = turnScript({ steps: 10, deltas: 400 })
const times = new Map(systems.map((s) => [s.short, []]))
const cpu = new Map(systems.map((s) => [s.short, []]))
for (let round = 0; round < Number(rounds) + 3; round++) {
  for (const system of systems) {
    const lane = `${system.short.replace(/\W/g, "")}${round}`
    await server.fill(lane, script)
    const session = await system.newSession(lane)
    const t0 = performance.now()
    const c0 = process.cpuUsage()
    await system.turn(session, `lane:${lane} go`, () => {})
    const c1 = process.cpuUsage(c0)
    if (round >= 3) {
      times.get(system.short).push(performance.now() - t0)
      cpu.get(system.short).push((c1.user + c1.system) / 1000)
    }
  }
}
for (const s of systems) await s.close()
server.close()
fs.rmSync(dir, { recursive: true, force: true })
const base = stats(times.get(systems[0].short)).median
const baseCpu = stats(cpu.get(systems[0].short)).median
for (const [name, values] of times) {
  const s = stats(values)
  const c = stats(cpu.get(name))
  console.log(
    `${name.padEnd(20)} median ${s.median.toFixed(1).padStart(7)} ms (min ${s.min.toFixed(1)}, max ${s.max.toFixed(1)}) × ${(s.median / base).toFixed(2)}` +
      `   client CPU ${c.median.toFixed(1).padStart(7)} ms × ${(c.median / baseCpu).toFixed(2)}`,
  )
}
