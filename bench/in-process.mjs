// The in-process workload (issue 36): turnchart's cost per step and per delta over the same bare
// loop, with a language model that streams from memory (bench/memory-model.mjs: no HTTP, no
// other process), on a SQLite file and on `:memory:`; then the same turn over HTTP (the scripted
// server), so what only the network's chunks cost is a figure; then CPU and allocation profiles
// of turnchart's steps, attributed by module.
//
//   inProcess({ server, dir, rounds, log, dists }) -> { shapes, times, cpu, http, profile, ... }
//   inProcessTargets(result) -> TargetResult[] (run.mjs)
//   renderInProcess(result) -> a Markdown section
//
// Standalone (after `npm run build`):
//   node bench/in-process.mjs [rounds]                 the figures, and the profile
//   BENCH_DISTS=A=/tmp/a/dist,B=dist node bench/in-process.mjs [rounds]
//       an A/B: the turnchart systems of each build, interleaved round by round in this one
//       process (each dist/ is its own copy of the code); prints each build's extra per step
//       and per delta, its CPU and allocation per step (profiled turn by turn, interleaved), the
//       ratio to A, and the load average at the run's start and end. BENCH_SHAPES=step,delta,http,profile
//       picks the parts.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Session } from 'node:inspector/promises'
import { aiSdkTools, aiSdkModel, turnchartCalls, TOOL_RESULT } from './systems.mjs'
import { memoryModel } from './memory-model.mjs'
import { startServer, turnScript, stats, expectModelCalls } from './lib.mjs'
import { summarizeProfile, categoryOf, orderedCategories, isTurnchart } from './profile-summary.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..')

/**
 * Warm-up turns before a per-step figure is taken, enough for V8 to be done optimizing. Code
 * that runs once a turn (a session, an actor, a turn's first row) reaches TurboFan only after
 * hundreds of turns, on V8's background threads, whose CPU process.cpuUsage() counts: after 30
 * warm-up turns, 206 TurboFan compiles (1.16 s of compile time) fell in the next 150 turns of
 * the `step` shape, about half the CPU measured per step, and the figure swung ±20 % from one
 * process to the next. After 400 there are ~30 left (~0.06 s).
 */
export const STEADY_WARMUP = 400

/** The turns measured: the issue's table (10 steps of 10 deltas, 9 tool calls of 1 KB), workload 1's shape, and one step of 2,000 and 20,000 deltas for the slope. */
export const SHAPES = {
  step: { steps: 10, deltas: 10 },
  w1: { steps: 10, deltas: 400 },
  d2k: { steps: 1, deltas: 2000 },
  d20k: { steps: 1, deltas: 20000 },
}
const WARMUP = 5
const TARGETS = { memoryMsPerStep: 0.4, fileMsPerStep: 0.8, usPerDelta: 0.3 }

/** The bare loop: doStream, the parts read, the tool run, the prompt grown; nothing stored. */
function bareLoop(model) {
  return {
    short: 'bare loop',
    async newSession() {
      return { prompt: [] }
    },
    async turn(session, prompt, onDelta) {
      session.prompt.push({ role: 'user', content: [{ type: 'text', text: prompt }] })
      for (let step = 0; step < 50; step++) {
        const { stream } = await model.doStream({ prompt: session.prompt, tools: [] })
        let text = ''
        const calls = []
        const reader = stream.getReader()
        for (;;) {
          const { done, value: part } = await reader.read()
          if (done) break
          if (part.type === 'text-delta') {
            text += part.delta
            onDelta(part.delta)
          } else if (part.type === 'tool-call') calls.push(part)
        }
        const content = text ? [{ type: 'text', text }] : []
        for (const call of calls) content.push({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: JSON.parse(call.input) })
        session.prompt.push({ role: 'assistant', content })
        if (calls.length === 0) return
        const results = []
        for (const call of calls) results.push({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'text', value: TOOL_RESULT } })
        session.prompt.push({ role: 'tool', content: results })
      }
      throw new Error('bare loop: too many steps')
    },
    async close() {},
  }
}

/** The builds to measure: BENCH_DISTS (label=path,...) or the one TURNCHART_DIST / dist. */
function buildsFrom(dists) {
  const spec = dists ?? process.env.BENCH_DISTS
  if (!spec) return [{ label: '', dist: process.env.TURNCHART_DIST ?? path.join(root, 'dist') }]
  return spec.split(',').map((item) => {
    const [label, dist] = item.includes('=') ? item.split('=') : [path.basename(path.dirname(item)), item]
    return { label, dist: path.resolve(dist) }
  })
}

async function turnchartSystem(build, { database, model, tools }) {
  const { createEngine } = createRequire(path.join(build.dist, 'cjs/src/index.js'))(path.join(build.dist, 'cjs/src/index.js'))
  const engine = await createEngine({ database, model, tools })
  return { short: `turnchart ${database === ':memory:' ? 'memory' : 'file'}${build.label ? ` ${build.label}` : ''}`, ...turnchartCalls(engine) }
}

/** One system's turn on a new session; ms of wall time and of CPU (user + system). */
async function timeTurn(system, prompt, expected) {
  const session = await system.newSession()
  let count = 0
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await system.turn(session, prompt, () => count++)
  const ms = performance.now() - t0
  const c = process.cpuUsage(c0)
  if (count !== expected) throw new Error(`${system.short}: ${count} deltas, expected ${expected}`)
  return { ms, cpu: (c.user + c.system) / 1000 }
}

/** Every system of `systems` (id -> system), interleaved round by round; median ms per id. */
async function interleave(systems, { rounds, expected, prompt, before, log, what }) {
  const times = Object.fromEntries(Object.keys(systems).map((id) => [id, []]))
  const cpu = Object.fromEntries(Object.keys(systems).map((id) => [id, []]))
  for (let round = 0; round < WARMUP + rounds; round++) {
    // The order rotates, so no system always runs after the same one (a GC's debt moves with it).
    const ids = Object.keys(systems)
    const order = ids.slice(round % ids.length).concat(ids.slice(0, round % ids.length))
    for (const id of order) {
      if (before) await before(id, round)
      const r = await timeTurn(systems[id], prompt(id, round), expected)
      if (before) await before(id, round, true)
      if (round >= WARMUP) {
        times[id].push(r.ms)
        cpu[id].push(r.cpu)
      }
    }
  }
  log(`in-process ${what}: ${Object.entries(times).map(([id, t]) => `${id} ${stats(t).median.toFixed(2)} ms`).join(', ')}`)
  return { times, cpu }
}

export async function inProcess({ server, dir, rounds = 30, log = () => {}, dists, parts = (process.env.BENCH_SHAPES ?? 'step,delta,http,profile').split(',') }) {
  const builds = buildsFrom(dists)
  const tools = await aiSdkTools()
  const result = { rounds, warmup: WARMUP, shapes: SHAPES, builds: builds.map((b) => b.label), times: {}, cpu: {} }
  let files = 0
  const db = () => path.join(dir, `in-process-${++files}.db`)
  const systemsFor = async (shape, { file = true } = {}) => {
    const model = memoryModel(shape)
    const systems = { bare: bareLoop(model) }
    for (const build of builds) {
      systems[`memory${build.label}`] = await turnchartSystem(build, { database: ':memory:', model, tools })
      if (file) systems[`file${build.label}`] = await turnchartSystem(build, { database: db(), model, tools })
    }
    return systems
  }
  const closeAll = async (systems) => {
    for (const s of Object.values(systems)) await s.close()
  }
  const measure = async (key, shape, options) => {
    const systems = await systemsFor(shape, options)
    try {
      const r = await interleave(systems, { rounds, expected: shape.steps * shape.deltas, prompt: (id, round) => `round ${round}: fetch the documents`, log, what: key })
      result.times[key] = r.times
      result.cpu[key] = r.cpu
    } finally {
      await closeAll(systems)
    }
  }
  if (parts.includes('step')) await measure('step', SHAPES.step)
  if (parts.includes('delta')) {
    // The slope needs both lengths measured under the same conditions: one set of engines, the two shapes alternating.
    await measure('d2k', SHAPES.d2k, { file: false })
    await measure('d20k', SHAPES.d20k, { file: false })
  }
  if (parts.includes('http') && server) {
    await measure('w1', SHAPES.w1)
    result.http = {}
    for (const key of ['step', 'w1']) {
      const shape = SHAPES[key]
      const model = await aiSdkModel(server.url)
      const systems = { bare: httpBare(model) }
      for (const build of builds) {
        systems[`memory${build.label}`] = await turnchartSystem(build, { database: ':memory:', model, tools })
        systems[`file${build.label}`] = await turnchartSystem(build, { database: db(), model, tools })
      }
      const script = turnScript(shape)
      const lane = (id, round) => `inproc-${key}-${id.replace(/\W/g, '')}-${round}`
      try {
        result.http[key] = await interleave(systems, {
          rounds,
          expected: shape.steps * shape.deltas,
          prompt: (id, round) => `lane:${lane(id, round)} round ${round}: fetch the documents`,
          before: (id, round, after) => (after ? expectModelCalls(server, { workload: 'in-process (over HTTP)', system: id, lane: lane(id, round), expected: shape.steps, drop: true }) : server.fill(lane(id, round), script)),
          log,
          what: `${key} over HTTP`,
        })
      } finally {
        await closeAll(systems)
      }
    }
  }
  if (parts.includes('profile')) result.profile = await profileSteps(builds, tools, log)
  return result
}

/** The doStream loop of workload 1 on an HTTP model (systems.mjs's, without the tool's JSON Schema difference). */
function httpBare(model) {
  const loop = bareLoop(model)
  return { ...loop, short: 'doStream loop' }
}

/**
 * CPU and allocation profiles of turnchart's steps (10 steps × 10 deltas, `:memory:`, in
 * process), by module, for each build and for the bare loop: the process's CPU per turn with
 * nothing profiling, then node:inspector's sampling profiler, then its sampling heap profiler,
 * each started and stopped around every turn, the systems
 * interleaved turn by turn (order rotated each round), so each build's figures come from the same
 * stretch of the run. Per step: divided by the steps profiled.
 */
async function profileSteps(builds, tools, log, turns = 200) {
  const shape = SHAPES.step
  const model = memoryModel(shape)
  const systems = { bare: bareLoop(model) }
  for (const build of builds) systems[`memory${build.label}`] = await turnchartSystem(build, { database: ':memory:', model, tools })
  const ids = Object.keys(systems)
  const session = new Session()
  session.connect()
  const count = shape.steps * shape.deltas
  const steps = turns * shape.steps
  const profiled = Object.fromEntries(ids.map((id) => [id, { cpuUs: 0, cpu: undefined, alloc: undefined }]))
  // Each system's turns, interleaved: `around` profiles one turn and folds its summary in.
  const pass = async (around) => {
    for (let round = 0; round < turns; round++) {
      for (const id of ids.slice(round % ids.length).concat(ids.slice(0, round % ids.length))) await around(id, () => timeTurn(systems[id], `turn ${round}`, count))
    }
  }
  try {
    for (const id of ids) for (let i = 0; i < STEADY_WARMUP; i++) await timeTurn(systems[id], `warm-up ${i}`, count)
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 100 })
    await session.post('HeapProfiler.enable')
    // The CPU pass with no profiler running (the sampler's own thread would be counted in the
    // process's CPU), then the profile's pass (where the time goes, as shares of it), then the
    // allocation pass (the heap sampler reporting collected objects costs CPU that would
    // otherwise show in the profile).
    await pass(async (id, turn) => {
      const c0 = process.cpuUsage()
      await turn()
      const c = process.cpuUsage(c0)
      profiled[id].cpuUs += c.user + c.system
    })
    await pass(async (id, turn) => {
      await session.post('Profiler.start')
      await turn()
      const { profile } = await session.post('Profiler.stop')
      // The first sample carries the time from Profiler.start to the sampler's first tick
      // (milliseconds, in the inspector's dispatch), not the turn's: it is left out.
      const window = [profile.startTime + (profile.timeDeltas[0] ?? 0) + 1, profile.endTime]
      profiled[id].cpu = mergeCpu(profiled[id].cpu, summarizeProfile(profile, { window }))
    })
    await pass(async (id, turn) => {
      await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
      await turn()
      const { profile: heap } = await session.post('HeapProfiler.stopSampling')
      profiled[id].alloc = mergeAlloc(profiled[id].alloc, summarizeHeap(heap))
    })
    const summary = (id) => {
      const { cpuUs, cpu, alloc } = profiled[id]
      return { steps, cpuMsPerStep: cpuUs / 1000 / steps, cpu: { ...cpu, functions: cpu.functions.slice(0, 30) }, alloc: { ...alloc, functions: alloc.functions.slice(0, 30) } }
    }
    const perBuild = Object.fromEntries(builds.map((build) => [build.label, summary(`memory${build.label}`)]))
    const bare = summary('bare')
    for (const [label, tc] of Object.entries(perBuild)) {
      log(`in-process profile${label ? ` ${label}` : ''}: turnchart ${(tc.cpuMsPerStep * 1000).toFixed(0)} µs CPU and ${(tc.alloc.bytes / steps / 1024).toFixed(1)} KB per step; bare ${(bare.cpuMsPerStep * 1000).toFixed(0)} µs, ${(bare.alloc.bytes / steps / 1024).toFixed(1)} KB`)
    }
    // `turnchart`: the last build's, as the page shows one build.
    return { shape, turns, warmup: STEADY_WARMUP, builds: perBuild, turnchart: perBuild[builds.at(-1).label], bare }
  } finally {
    session.disconnect()
    for (const system of Object.values(systems)) await system.close()
  }
}

/** Two CPU summaries (bench/profile-summary.mjs's) as one: times added, by category and by function. */
function mergeCpu(a, b) {
  if (!a) return b
  return { busyUs: a.busyUs + b.busyUs, idleUs: a.idleUs + b.idleUs, categories: addUp(a.categories, b.categories), functions: mergeFunctions(a.functions, b.functions, 'us') }
}

/** Two allocation summaries (`summarizeHeap`'s) as one. */
function mergeAlloc(a, b) {
  if (!a) return b
  return { bytes: a.bytes + b.bytes, categories: addUp(a.categories, b.categories), functions: mergeFunctions(a.functions, b.functions, 'bytes') }
}

function addUp(a, b) {
  const sum = { ...a }
  for (const [key, value] of Object.entries(b)) sum[key] = (sum[key] ?? 0) + value
  return sum
}

function mergeFunctions(a, b, field) {
  const byKey = new Map(a.map((f) => [`${f.name} ${f.where}`, { ...f }]))
  for (const f of b) {
    const known = byKey.get(`${f.name} ${f.where}`)
    if (known) known[field] += f[field]
    else byKey.set(`${f.name} ${f.where}`, { ...f })
  }
  return [...byKey.values()].sort((x, y) => y[field] - x[field])
}

/** A sampling heap profile's allocated bytes by category (bench/profile-summary.mjs's) and by function (self). */
function summarizeHeap(profile) {
  const categories = {}
  const functions = new Map()
  let bytes = 0
  const walk = (node, inherited) => {
    const c = categoryOf(node.callFrame) ?? inherited
    const self = (node.selfSize ?? 0)
    if (self) {
      bytes += self
      categories[c] = (categories[c] ?? 0) + self
      const { functionName, url, lineNumber } = node.callFrame
      const where = url ? `${url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\/cjs\/src\//, 'src/').replace(/^file:\/\/.*\/bench\//, 'bench/')}:${lineNumber + 1}` : '(native)'
      const key = `${functionName || '(anonymous)'} ${where}`
      const f = functions.get(key) ?? { name: functionName || '(anonymous)', where, category: c, bytes: 0 }
      f.bytes += self
      functions.set(key, f)
    }
    for (const child of node.children ?? []) walk(child, c)
  }
  walk(profile.head, 'other')
  return { bytes, categories, functions: [...functions.values()].sort((a, b) => b.bytes - a.bytes) }
}

// ---------------------------------------------------------------------------------------

const med = (values) => (values?.length ? stats(values).median : NaN)

/** The figures of one build (label '' for a single build). */
export function figures(result, label = '') {
  const t = result.times
  const perStep = (id) => (med(t.step?.[`${id}${label}`]) - med(t.step?.bare)) / SHAPES.step.steps
  const slope = (id) => ((med(t.d20k?.[id]) - med(t.d2k?.[id])) / (SHAPES.d20k.deltas - SHAPES.d2k.deltas)) * 1000
  const c = result.cpu
  const cpuSlope = (id) => ((med(c.d20k?.[id]) - med(c.d2k?.[id])) / (SHAPES.d20k.deltas - SHAPES.d2k.deltas)) * 1000
  const http = (key, id) => result.http?.[key] && (med(result.http[key].times[`${id}${label}`]) - med(result.http[key].times.bare)) / SHAPES[key].steps
  return {
    memoryMsPerStep: perStep('memory'),
    fileMsPerStep: perStep('file'),
    usPerDelta: slope(`memory${label}`) - slope('bare'),
    bareUsPerDelta: slope('bare'),
    cpuUsPerDelta: cpuSlope(`memory${label}`) - cpuSlope('bare'),
    w1MemoryMsPerStep: t.w1 ? (med(t.w1[`memory${label}`]) - med(t.w1.bare)) / SHAPES.w1.steps : NaN,
    w1FileMsPerStep: t.w1 ? (med(t.w1[`file${label}`]) - med(t.w1.bare)) / SHAPES.w1.steps : NaN,
    httpStepFileMsPerStep: http('step', 'file'),
    httpW1FileMsPerStep: http('w1', 'file'),
    httpW1MemoryMsPerStep: http('w1', 'memory'),
  }
}

export function inProcessTargets(result) {
  if (!result?.times?.step) return [{ target: 'in-process: turnchart\'s extra per step and per delta', measured: 'not measured', met: null }]
  const f = figures(result)
  const ms = (v) => `${v.toFixed(2)} ms`
  const out = [
    { target: `in-process (10 steps × 10 deltas, 9 tool calls of 1 KB): turnchart's extra on SQLite :memory: ≤ ${TARGETS.memoryMsPerStep} ms per step`, measured: `${ms(f.memoryMsPerStep)} (${med(result.times.step.memory).toFixed(2)} ms / ${med(result.times.step.bare).toFixed(2)} ms per turn)`, met: f.memoryMsPerStep <= TARGETS.memoryMsPerStep, value: f.memoryMsPerStep, limit: { max: TARGETS.memoryMsPerStep }, unit: 'ms' },
    { target: `in-process: turnchart's extra on a SQLite file ≤ ${TARGETS.fileMsPerStep} ms per step`, measured: `${ms(f.fileMsPerStep)} (${med(result.times.step.file).toFixed(2)} ms / ${med(result.times.step.bare).toFixed(2)} ms per turn)`, met: f.fileMsPerStep <= TARGETS.fileMsPerStep, value: f.fileMsPerStep, limit: { max: TARGETS.fileMsPerStep }, unit: 'ms' },
  ]
  if (result.times.d20k) out.push({ target: `in-process: turnchart's extra per delta ≤ ${TARGETS.usPerDelta} µs (slope between 2,000 and 20,000 deltas of one step, :memory:)`, measured: `${f.usPerDelta.toFixed(2)} µs (the bare loop's own ${f.bareUsPerDelta.toFixed(2)} µs)`, met: f.usPerDelta <= TARGETS.usPerDelta, value: f.usPerDelta, limit: { max: TARGETS.usPerDelta }, unit: ' µs' })
  if (result.http?.w1) out.push({ target: 'information: workload 1\'s turn (10 × 400 deltas), turnchart file\'s extra per step over HTTP against in process', measured: `${ms(f.httpW1FileMsPerStep)} over HTTP, ${ms(f.w1FileMsPerStep)} in process (${ms(f.httpW1FileMsPerStep - f.w1FileMsPerStep)} per step only over HTTP)`, met: null })
  return out
}

export function renderInProcess(result) {
  if (!result?.times?.step) return ''
  const lines = []
  const p = (s = '') => lines.push(s)
  const f = figures(result)
  const name = { bare: 'bare loop (doStream, nothing stored)', memory: 'turnchart, SQLite :memory:', file: 'turnchart, SQLite file' }
  p('## In process: the cost per step and per delta')
  p()
  p(`A language model that streams from memory (\`bench/memory-model.mjs\`: no HTTP, no other process) and the same tool (1 KB result): a bare loop over its \`doStream\` against turnchart on SQLite \`:memory:\` and on a file, ${result.rounds} rounds after ${result.warmup} warm-up, systems interleaved (order rotated each round), each turn on a new session. Then the same turns over HTTP (the scripted server, the openai-compatible provider), where the bare loop is workload 1's doStream loop. The extra per step is (turnchart's median − the bare loop's) / steps; per delta, the slope between one step of 2,000 and one of 20,000 deltas (the turn's fixed cost cancels). \`node bench/in-process.mjs\` runs it alone; with \`BENCH_DISTS=A=<dist>,B=<dist>\` it interleaves two builds (the A/B figures in the notes).`)
  p()
  p('| turn | system | median ms/turn | min | max | CPU ms/turn | extra ms per step |')
  p('|---|---|---:|---:|---:|---:|---:|')
  const rows = (label, times, cpu, shape) => {
    const bare = med(times.bare)
    for (const id of Object.keys(times)) {
      const s = stats(times[id])
      p(`| ${label} | ${name[id] ?? id} | ${s.median.toFixed(2)} | ${s.min.toFixed(2)} | ${s.max.toFixed(2)} | ${med(cpu[id]).toFixed(2)} | ${id === 'bare' ? '–' : ((s.median - bare) / shape.steps).toFixed(3)} |`)
    }
  }
  const label = (key) => `${SHAPES[key].steps} step${SHAPES[key].steps > 1 ? 's' : ''} × ${SHAPES[key].deltas.toLocaleString('en')} deltas`
  for (const key of ['step', 'w1', 'd2k', 'd20k']) if (result.times[key]) rows(label(key), result.times[key], result.cpu[key], SHAPES[key])
  for (const key of ['step', 'w1']) if (result.http?.[key]) rows(`${label(key)}, over HTTP`, result.http[key].times, result.http[key].cpu, SHAPES[key])
  p()
  const cpuStep = (id) => (med(result.cpu.step[id]) - med(result.cpu.step.bare)) / SHAPES.step.steps
  p(`Of CPU (user + system of the process, less moved than wall time when other processes take the cores): turnchart's extra per step is ${cpuStep('memory').toFixed(2)} ms on :memory: and ${cpuStep('file').toFixed(2)} ms on a file (10 × 10). When the machine is loaded (load average far above its cores), a turn's wall time is mostly waiting for a core and the wall-time figures above say little; the ratios between systems of one run, and the CPU figures, still compare.`)
  p(`Per delta (slope, \`:memory:\`): turnchart ${(f.usPerDelta + f.bareUsPerDelta).toFixed(2)} µs, the bare loop ${f.bareUsPerDelta.toFixed(2)} µs: **${f.usPerDelta.toFixed(2)} µs** extra (of CPU: ${f.cpuUsPerDelta.toFixed(2)} µs extra).`)
  if (result.http?.w1 && result.times.w1) {
    const chunks = SHAPES.w1.deltas
    p(`Over HTTP against in process, workload 1's turn (10 × 400): turnchart file's extra is ${f.httpW1FileMsPerStep.toFixed(2)} ms per step over HTTP and ${f.w1FileMsPerStep.toFixed(2)} ms in process; the difference, ${(f.httpW1FileMsPerStep - f.w1FileMsPerStep).toFixed(2)} ms per step (${(((f.httpW1FileMsPerStep - f.w1FileMsPerStep) / chunks) * 1000).toFixed(2)} µs per chunk), is what only network chunks cost (:memory:: ${f.httpW1MemoryMsPerStep.toFixed(2)} against ${f.w1MemoryMsPerStep.toFixed(2)} ms).`)
  }
  p()
  renderTargetsInline(p, inProcessTargets(result))
  if (result.profile) renderStepProfile(p, result.profile)
  return lines.join('\n')
}

function renderTargetsInline(p, targets) {
  p('| target | measured | result |')
  p('|---|---|---|')
  for (const t of targets) p(`| ${t.target} | ${t.measured} | ${t.met === null ? 'information' : t.met ? 'met' : '**missed**'} |`)
  p()
}

function renderStepProfile(p, prof) {
  const { turnchart: tc, bare } = prof
  const us = (s, v) => ((v / s.cpu.busyUs) * s.cpuMsPerStep * 1000).toFixed(1)
  p('### One step, profiled (CPU and allocation, by module)')
  p()
  p(`${prof.turns} turns of ${prof.shape.steps} steps × ${prof.shape.deltas} deltas in process on \`:memory:\` after ${prof.warmup ?? 20} warm-up turns, under node:inspector's sampling profiler (100 µs) and sampling heap profiler (512 B), then the bare loop the same way. µs per step: the process's CPU per step (user + system) times the category's share of the busy samples; allocation: the sampled bytes allocated (self) per step. turnchart ${(tc.cpuMsPerStep * 1000).toFixed(0)} µs CPU and ${(tc.alloc.bytes / tc.steps / 1024).toFixed(1)} KB per step, the bare loop ${(bare.cpuMsPerStep * 1000).toFixed(0)} µs and ${(bare.alloc.bytes / bare.steps / 1024).toFixed(1)} KB.`)
  p()
  p('| where (self) | turnchart µs/step | share | KB allocated/step | bare loop µs/step | bare KB/step |')
  p('|---|---:|---:|---:|---:|---:|')
  const cats = orderedCategories(tc.cpu, { categories: tc.alloc.categories })
  for (const c of cats) {
    const kb = (s) => ((s.alloc.categories[c] ?? 0) / s.steps / 1024).toFixed(2)
    p(`| ${c} | ${us(tc, tc.cpu.categories[c] ?? 0)} | ${((100 * (tc.cpu.categories[c] ?? 0)) / tc.cpu.busyUs).toFixed(1)} % | ${kb(tc)} | ${bare.cpu.categories[c] ? us(bare, bare.cpu.categories[c]) : '–'} | ${kb(bare)} |`)
  }
  const own = (s, get) => Object.entries(get(s)).filter(([c]) => isTurnchart(c)).reduce((a, [, v]) => a + v, 0)
  p(`| **turnchart's own code** | ${us(tc, own(tc, (s) => s.cpu.categories))} | ${((100 * own(tc, (s) => s.cpu.categories)) / tc.cpu.busyUs).toFixed(1)} % | ${(own(tc, (s) => s.alloc.categories) / tc.steps / 1024).toFixed(2)} | | |`)
  p()
  p('Top functions by self time and by bytes allocated, turnchart:')
  p()
  p('| function (built code) | where | µs/step | | function (built code) | where | KB/step |')
  p('|---|---|---:|---|---|---|---:|')
  for (let i = 0; i < 15; i++) {
    const f = tc.cpu.functions[i]
    const a = tc.alloc.functions[i]
    p(`| ${f ? `\`${f.name}\` (${path.basename(f.where)})` : ''} | ${f?.category ?? ''} | ${f ? us(tc, f.us) : ''} | | ${a ? `\`${a.name}\` (${path.basename(a.where)})` : ''} | ${a?.category ?? ''} | ${a ? (a.bytes / tc.steps / 1024).toFixed(2) : ''} |`)
  }
  p()
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rounds = Number(process.argv[2] ?? 30)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-in-process-'))
  const needsServer = (process.env.BENCH_SHAPES ?? 'step,delta,http,profile').includes('http')
  const server = needsServer ? await startServer() : undefined
  const log = (...a) => console.error(...a)
  // The run's load: above the cores, other processes took CPU from the turns (say it with the figures).
  const loadAtStart = os.loadavg()[0]
  try {
    const result = await inProcess({ server, dir, rounds, log })
    if (result.builds.length > 1 || result.builds[0]) {
      const all = result.builds.map((label) => [label, figures(result, label)])
      const [, a] = all[0]
      for (const [label, f] of all) {
        console.log(`${label.padEnd(8)} ${Object.entries(f).map(([k, v]) => `${k} ${Number.isFinite(v) ? v.toFixed(3) : '–'}${a !== f && Number.isFinite(v) ? ` (×${(v / a[k]).toFixed(2)})` : ''}`).join('  ')}`)
      }
      // Per-turn ratio of each build to the first, per shape (the A/B figure less moved by the bare loop's noise).
      for (const [key, times] of Object.entries(result.times).concat(Object.entries(result.http ?? {}).map(([k, v]) => [`${k} http`, v.times]))) {
        for (const kind of ['memory', 'file']) {
          const first = med(times[`${kind}${result.builds[0]}`])
          if (!Number.isFinite(first)) continue
          const cpu = key.endsWith(' http') ? result.http[key.split(' ')[0]].cpu : result.cpu[key]
          const firstCpu = med(cpu[`${kind}${result.builds[0]}`])
          console.log(`${key.padEnd(10)} ${kind.padEnd(6)} bare ${med(times.bare).toFixed(2)} ms  ${result.builds.map((l) => `${l} ${med(times[`${kind}${l}`]).toFixed(2)} ms (×${(med(times[`${kind}${l}`]) / first).toFixed(3)}), CPU ${med(cpu[`${kind}${l}`]).toFixed(2)} ms (×${(med(cpu[`${kind}${l}`]) / firstCpu).toFixed(3)})`).join('  ')}`)
        }
      }
      if (result.profile) {
        // CPU and allocation per step of each build, profiled turn by turn interleaved (:memory:, 10 × 10).
        const per = (tc) => ({ cpuUs: tc.cpuMsPerStep * 1000, kb: tc.alloc.bytes / tc.steps / 1024 })
        const first = per(result.profile.builds[result.builds[0]])
        const bare = per(result.profile.bare)
        console.log(`profile    memory bare ${bare.cpuUs.toFixed(0)} µs, ${bare.kb.toFixed(1)} KB per step  ${result.builds.map((l) => { const f = per(result.profile.builds[l]); return `${l} ${f.cpuUs.toFixed(0)} µs (×${(f.cpuUs / first.cpuUs).toFixed(3)}), ${f.kb.toFixed(1)} KB (×${(f.kb / first.kb).toFixed(3)}) per step` }).join('  ')}`)
      }
      console.log(`load average ${loadAtStart.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end (${os.cpus().length} cores)`)
    } else {
      console.log(renderInProcess(result))
      fs.mkdirSync(path.join(here, 'results'), { recursive: true })
      const file = path.join(here, 'results', `in-process-${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
      fs.writeFileSync(file, JSON.stringify(result))
      log(`figures in ${path.relative(root, file)}`)
    }
  } finally {
    server?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
