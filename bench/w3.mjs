// Workload 3, one system in a fresh process (forked by run.mjs): all sessions start a turn at
// once; reports turns/s, client CPU, delta delay percentiles, event-loop delay and utilisation,
// peak RSS, and the turns' time window (CLOCK_MONOTONIC µs, for a --cpu-prof of this process).
// Exits after reporting, so a --cpu-prof profile is written.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { createSystems } from './systems.mjs'
import { stats } from './lib.mjs'

process.once('message', async ({ id, baseURL, dir, lanes, expectDeltas }) => {
  const [system] = await createSystems({ baseURL, dir }, [id])
  const sessions = []
  for (const lane of lanes) sessions.push({ lane, session: await system.newSession(lane) })
  globalThis.gc?.()
  const baseRss = process.memoryUsage().rss
  const delays = []
  let errors = 0
  let firstError
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const elu0 = performance.eventLoopUtilization()
  const cpu0 = process.cpuUsage()
  const from = Number(process.hrtime.bigint() / 1000n)
  const t0 = performance.now()
  await Promise.all(
    sessions.map(async ({ lane, session }) => {
      let count = 0
      const onDelta = (delta) => {
        const now = Number(process.hrtime.bigint() / 1000n)
        const sent = parseInt(delta, 10)
        if (Number.isFinite(sent)) delays.push((now - sent) / 1000)
        count++
      }
      try {
        await system.turn(session, `lane:${lane} fetch three documents`, onDelta)
        if (count !== expectDeltas) throw new Error(`${count} deltas, expected ${expectDeltas}`)
      } catch (error) {
        errors++
        firstError ??= String(error?.message ?? error)
      }
    }),
  )
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const window = [from, Number(process.hrtime.bigint() / 1000n)]
  const elu = performance.eventLoopUtilization(elu0)
  loop.disable()
  await system.close()
  const s = stats(delays.length ? delays : [NaN])
  process.send({
    id,
    short: system.short,
    kind: system.kind,
    turns: lanes.length,
    errors,
    firstError,
    wallS: wallMs / 1000,
    turnsPerSecond: (lanes.length - errors) / (wallMs / 1000),
    cpuMsPerTurn: (cpu.user + cpu.system) / 1000 / lanes.length,
    p50: delays.length ? [...delays].sort((a, b) => a - b)[delays.length >> 1] : NaN,
    p99: s.p99,
    maxDelay: s.max,
    samples: delays.length,
    loopP50: loop.percentile(50) / 1e6,
    loopP99: loop.percentile(99) / 1e6,
    loopMax: loop.max / 1e6,
    loopUtilization: elu.utilization, // share of the wall time the event loop was busy (not waiting for I/O)
    window,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    baseRssMb: baseRss / 1024 / 1024,
  })
  process.disconnect()
})
