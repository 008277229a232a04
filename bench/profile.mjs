// Profiles one system on workload 1 (default: turnchart on a file):
//   node --cpu-prof --cpu-prof-dir=bench/out bench/profile.mjs [system] [turns]
//   node bench/profile-summary.mjs bench/out/<file>.cpuprofile
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createSystems } from './systems.mjs'
import { startServer, turnScript, stats } from './lib.mjs'

const [id = 'tc-file', turns = '30'] = process.argv.slice(2)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-profile-'))
const server = await startServer()
const [system] = await createSystems({ baseURL: server.url, dir }, [id])
const script = turnScript({ steps: 10, deltas: 400 })
const times = []
for (let i = 0; i < Number(turns); i++) {
  await server.fill('p', script)
  const session = await system.newSession('p')
  const t0 = performance.now()
  await system.turn(session, `lane:p turn ${i}`, () => {})
  times.push(performance.now() - t0)
}
await system.close()
server.close()
fs.rmSync(dir, { recursive: true, force: true })
const s = stats(times.slice(3))
console.error(`${system.short}: median ${s.median.toFixed(1)} ms, min ${s.min.toFixed(1)}, max ${s.max.toFixed(1)} (${times.length - 3} turns after 3 warm-up)`)
