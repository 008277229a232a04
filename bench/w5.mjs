// Workload 5, one turnchart engine process on PostgreSQL (forked by pg.mjs, once or twice at a
// time): opens the engine and its sessions on 'setup', runs all its turns at once on 'go'
// (sent to every process at the same moment), reports CPU, delta delays and statement counts;
// closes on 'close'.
import fs from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { turnchartPg, instrumentPg, snapshotQueries } from './pg-systems.mjs'

instrumentPg()
let system
let sessions
/** The event-loop thread's nanoseconds on a CPU and waiting for one (Linux schedstat), or null. */
const schedstat = () => {
  try {
    const [run, wait] = fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number)
    return { run, wait }
  } catch {
    return null
  }
}
const micros = () => Number(process.hrtime.bigint() / 1000n) // CLOCK_MONOTONIC: comparable across processes

process.on('message', async (message) => {
  try {
    if (message.cmd === 'setup') {
      system = await turnchartPg({ baseURL: message.baseURL, url: message.url })
      sessions = []
      for (const lane of message.lanes) sessions.push({ lane, session: await system.newSession() })
      globalThis.gc?.()
      process.send({ ready: true })
    } else if (message.cmd === 'go') {
      process.send(await run(message))
    } else if (message.cmd === 'close') {
      // After the parent's CPU readings: PostgreSQL backends keep their CPU time until they exit.
      await system.close()
      process.send({ closed: true })
    }
  } catch (error) {
    process.send({ error: String(error?.stack ?? error) })
  }
})
process.on('disconnect', () => process.exit(0))

async function run({ expectDeltas, database }) {
  const delays = []
  const turnMs = [] // from the prompt to the turn's end
  const firstDeltaMs = [] // from the prompt to its first delta
  let errors = 0
  let firstError
  const loop = monitorEventLoopDelay({ resolution: 10 })
  const queries0 = snapshotQueries(database)
  loop.enable()
  const cpu0 = process.cpuUsage()
  const sched0 = schedstat()
  const start = micros()
  await Promise.all(
    sessions.map(async ({ lane, session }) => {
      let count = 0
      const began = micros()
      const onDelta = (delta) => {
        if (count === 0) firstDeltaMs.push((micros() - began) / 1000)
        const sent = parseInt(delta, 10)
        if (Number.isFinite(sent)) delays.push((micros() - sent) / 1000)
        count++
      }
      try {
        await system.turn(session, `lane:${lane} fetch three documents`, onDelta)
        if (count !== expectDeltas) throw new Error(`${count} deltas, expected ${expectDeltas}`)
        turnMs.push((micros() - began) / 1000)
      } catch (error) {
        errors++
        firstError ??= String(error?.message ?? error)
      }
    }),
  )
  const end = micros()
  const sched1 = schedstat()
  const cpu = process.cpuUsage(cpu0)
  loop.disable()
  const queries1 = snapshotQueries(database)
  const kinds = Object.fromEntries(Object.entries(queries1.kinds).map(([k, n]) => [k, n - (queries0.kinds[k] ?? 0)]))
  return {
    pid: process.pid,
    turns: sessions.length,
    errors,
    firstError,
    start,
    end,
    cpuMs: (cpu.user + cpu.system) / 1000,
    loopRunMs: sched0 && sched1 ? (sched1.run - sched0.run) / 1e6 : undefined,
    loopWaitMs: sched0 && sched1 ? (sched1.wait - sched0.wait) / 1e6 : undefined,
    delays: Float64Array.from(delays),
    turnMs,
    firstDeltaMs,
    loopP99: loop.percentile(99) / 1e6,
    loopMax: loop.max / 1e6,
    queries: queries1.total - queries0.total,
    kinds,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  }
}
