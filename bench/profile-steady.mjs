// A CPU profile of one system's steady state on workload 1: warm-up turns first, then the
// profiler (node:inspector) runs over the measured turns only, so start-up is not in it.
//   node bench/profile-steady.mjs [system] [turns] [out.cpuprofile]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Session } from 'node:inspector/promises'
import { createSystems } from './systems.mjs'
import { startServer, turnScript, stats } from './lib.mjs'

const [id = 'tc-file', turns = '30', out = `bench/out/${id}.cpuprofile`] = process.argv.slice(2)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-profile-'))
const server = await startServer()
const [system] = await createSystems({ baseURL: server.url, dir }, [id])
await system.init?.()
const script = turnScript({ steps: 10, deltas: 400 })
const session = new Session()
session.connect()
await session.post('Profiler.enable')
await session.post('Profiler.setSamplingInterval', { interval: 200 })
const times = []
const warmup = 5
for (let i = 0; i < warmup + Number(turns); i++) {
  if (i === warmup) await session.post('Profiler.start')
  await server.fill(`p${i}`, script)
  const conversation = await system.newSession(`p${i}`)
  const t0 = performance.now()
  await system.turn(conversation, `lane:p${i} turn`, () => {})
  if (i >= warmup) times.push(performance.now() - t0)
}
const { profile } = await session.post('Profiler.stop')
fs.mkdirSync(path.dirname(out), { recursive: true })
fs.writeFileSync(out, JSON.stringify(profile))
await system.close()
server.close()
fs.rmSync(dir, { recursive: true, force: true })
const s = stats(times)
console.error(`${system.short}: median ${s.median.toFixed(1)} ms over ${times.length} turns; profile in ${out}`)
