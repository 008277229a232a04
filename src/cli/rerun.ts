/**
 * `turnchart rerun <db> <turn>`: runs a stored turn again in a scratch database, by default
 * against its recorded responses with its recorded tool results (no provider is called), and
 * prints its parts beside the original's with the first difference marked. `--model <url>`
 * runs it against another model (an OpenAI-compatible endpoint), `--system` with another
 * system prompt, `--tools live` with the app's tools run for real: an eval built from real
 * traffic. The database is only read.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { ToolSet } from 'ai'
import type { EngineModel } from '../config/options'
import { TurnNotFoundError } from '../core/errors'
import type { Part } from '../core/types'
import type { RecordingSource } from '../testing/recording-source'
import { rerunTurn, type RerunOptions, type RerunResult, type RerunSide } from '../testing/rerun-turn'
import { trajectoryOf } from '../testing/trajectory'
import { diffTrajectories, formatTrajectoryDiff } from '../testing/trajectory-diff'
import { parseArgs, UsageError } from './args'
import { loadDemoProvider } from './demo'
import { asFlagError, CliError, colors, formatPart, openForReading, truncate, type CliIO, type Colors } from './io'
import type { ReadOnlyStore } from '../store/backends/read-only-store'

const width = 56

export async function rerunCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags, values } = parseArgs(argv, {
    flags: ['json', 'steps'],
    values: ['model', 'model-id', 'system', 'tools', 'tools-module', 'out', 'after-divergence', 'tool-drift'],
    positionals: ['db', 'turn'],
  })
  const [database, turnId] = positionals
  const modes = rerunModes(values)
  const model = values.has('model') ? endpointModel(values.get('model')!, values.get('model-id') ?? io.env.TURNCHART_MODEL, io) : undefined
  const tools = modes.tools === 'live' ? loadTools(values.get('tools-module')!) : undefined
  const out = values.get('out')
  if (out !== undefined && fs.existsSync(out)) throw new CliError(`--out ${out} exists: name a file that does not exist yet (the re-run's database is created there)`)
  const result = await rerunStored(database, turnId, {
    ...(model ? (modes.afterDivergence === 'live' ? { afterDivergence: 'live' as const, liveModel: model } : { model }) : {}),
    ...(modes.toolDrift === 'continue' ? { toolDrift: 'continue' as const } : {}),
    ...(tools ? { tools } : {}),
    ...(values.has('system') ? { system: values.get('system') } : {}),
    ...(out !== undefined ? { database: out } : {}),
  })
  const against = values.get('model') === undefined ? 'recorded' : modes.afterDivergence === 'live' ? `recorded, then ${values.get('model')}` : values.get('model')!
  if (flags.has('json')) {
    const index = result.firstDifference
    const difference = index === -1 ? null : { index: index + 1, original: result.original.parts[index] ?? null, rerun: result.rerun.parts[index] ?? null }
    const steps = diffTrajectories(trajectoryOf(result.original), trajectoryOf(result.rerun))
    io.stdout.write(`${JSON.stringify({ turnId, against, tools: modes.tools, ...result, firstDifference: difference, trajectoryDiff: steps }, null, 2)}\n`)
    return 0
  }
  print(result, { turnId, against, tools: modes.tools, out, steps: flags.has('steps') }, io)
  return 0
}

/** `--tools`, `--after-divergence` and `--tool-drift`, checked together (each names what it needs). */
function rerunModes(values: Map<string, string>): { tools: 'recorded' | 'live'; afterDivergence: 'stop' | 'live'; toolDrift: 'stop' | 'continue' } {
  const tools = values.get('tools') ?? 'recorded'
  if (tools !== 'recorded' && tools !== 'live') throw new UsageError(`--tools is recorded or live, not ${tools}`)
  if (tools === 'live' && !values.has('tools-module')) throw new UsageError('--tools live needs --tools-module <file>: a module exporting your tools as `tools`')
  if (tools !== 'live' && values.has('tools-module')) throw new UsageError('--tools-module is read with --tools live only')
  const afterDivergence = values.get('after-divergence') ?? 'stop'
  if (afterDivergence !== 'stop' && afterDivergence !== 'live') throw new UsageError(`--after-divergence is stop or live, not ${afterDivergence}`)
  if (afterDivergence === 'live' && !values.has('model')) throw new UsageError('--after-divergence live needs --model <url>: the model that goes on from the divergence')
  const toolDrift = values.get('tool-drift') ?? 'stop'
  if (toolDrift !== 'stop' && toolDrift !== 'continue') throw new UsageError(`--tool-drift is stop or continue, not ${toolDrift}`)
  if (toolDrift === 'continue' && tools !== 'live') throw new UsageError('--tool-drift continue needs --tools live: only live tools can drift')
  return { tools, afterDivergence, toolDrift }
}

/** Re-runs a turn of the database at `database`, read through a read-only store; a pruned log or an unknown turn is a `CliError`. */
async function rerunStored(database: string, turnId: string, options: RerunOptions): Promise<RerunResult> {
  const store = await openForReading(database)
  try {
    const turn = await store.read((s) => s.turns.get(turnId))
    if (turn?.outcome && (await store.read((s) => s.transitions.list(turnId))).length === 0) {
      throw new CliError(`the transition log of turn ${turnId} was pruned (turnchart prune): its model calls cannot be re-run; its messages and parts remain: turnchart show ${database} ${turn.sessionId}`)
    }
    return await rerunTurn(readOnlySource(store), turnId, options)
  } catch (error) {
    if (TurnNotFoundError.isInstance(error)) throw new CliError(`no turn ${turnId} in ${database}`)
    throw asFlagError(error, '--out')
  } finally {
    await store.close()
  }
}

/** The stored turn through the read-only store, one read-only transaction per read. */
function readOnlySource(store: ReadOnlyStore): RecordingSource {
  return {
    getTurn: (id) => store.read((s) => s.turns.get(id)),
    transitions: (id) => store.read((s) => s.transitions.list(id)),
    messages: (id) => store.read((s) => s.messages.list(id)),
    turnInput: (id) => store.read((s) => s.turns.input(id)),
  }
}

/** `--model <base URL>`: an OpenAI-compatible endpoint, as the demo's TURNCHART_BASE_URL (its key from TURNCHART_API_KEY, never a flag). */
export function endpointModel(baseURL: string, modelId: string | undefined, io: CliIO): EngineModel {
  if (!/^https?:\/\//i.test(baseURL)) throw new UsageError(`--model takes an endpoint's base URL (http://… or https://…), not ${baseURL}`)
  if (!modelId) throw new UsageError('--model needs a model id: --model-id <id> or TURNCHART_MODEL')
  const createOpenAICompatible = loadDemoProvider()
  return createOpenAICompatible({ name: 'turnchart-rerun', baseURL, apiKey: io.env.TURNCHART_API_KEY, includeUsage: true })(modelId)
}

/** `--tools-module <file>`: the app's tools, exported as `tools` (or as the module's default export). */
export function loadTools(file: string): ToolSet {
  let loaded: { tools?: unknown; default?: unknown }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require(path.resolve(file)) as { tools?: unknown; default?: unknown }
  } catch (error) {
    throw new CliError(`cannot load --tools-module ${file}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const tools = loaded.tools ?? (loaded.default as { tools?: unknown } | undefined)?.tools ?? loaded.default
  if (typeof tools !== 'object' || tools === null) throw new CliError(`--tools-module ${file} exports no tools: export them as \`tools\``)
  return tools as ToolSet
}

function print(result: RerunResult, run: { turnId: string; against: string; tools: string; out: string | undefined; steps: boolean }, io: CliIO): void {
  const c = colors(io)
  const out = (line = '') => io.stdout.write(`${line}\n`)
  const { original, rerun } = result
  const model = run.against === 'recorded' ? `its recorded responses (${result.recordedCalls} model calls)` : run.against.startsWith('recorded, then ') ? `its recorded responses, then ${run.against.slice('recorded, then '.length)} past a divergence` : run.against
  out(c.bold(`re-run of turn ${run.turnId} against ${model}, tools: ${run.tools === 'live' ? 'run for real' : 'recorded results'}`))
  out(c.dim(`original ${original.turnId}: ${['idle', ...original.states].join(' → ')}`))
  out(c.dim(`re-run   ${rerun.turnId}: ${['idle', ...rerun.states].join(' → ')}`))
  out()
  if (result.diverged) out(c.yellow(`diverged at model call ${result.diverged.call}${result.diverged.step !== undefined ? ` (step ${result.diverged.step})` : ''}: ${result.diverged.reason}; the live model answered from there`))
  for (const drift of result.toolDrift) {
    out(c.yellow(`tool drift, step ${drift.step}: ${drift.toolName}(${JSON.stringify(drift.input)}) recorded ${JSON.stringify(modelValue(drift.recorded))}, live ${JSON.stringify(modelValue(drift.live))}`))
  }
  if (result.diverged || result.toolDrift.length > 0) out()
  if (run.steps) {
    // The steps side by side in place of the parts: what an eval compares.
    io.stdout.write(formatTrajectoryDiff(diffTrajectories(trajectoryOf(original), trajectoryOf(rerun)), { color: c.bold('x') !== 'x', width }))
    for (const note of result.notes) out(c.dim(`note: ${note}`))
    return
  }
  out(c.bold(`  ${'#'.padStart(3)}  ${'original'.padEnd(width)} │ re-run`))
  const plain = colors({ ...io, stdout: { ...io.stdout, isTTY: false } as CliIO['stdout'] })
  const rows = Math.max(original.parts.length, rerun.parts.length)
  const differing = new Set(result.differences)
  for (let i = 0; i < rows; i++) {
    const [left, right] = [cell(original.parts[i], plain), cell(rerun.parts[i], plain)]
    const first = i === result.firstDifference
    const line = `${first ? '>' : differing.has(i) ? '*' : ' '} ${String(i + 1).padStart(3)}  ${left.padEnd(width)} │ ${right}`
    out(first ? c.yellow(line) : line)
  }
  out()
  if (result.firstDifference === -1) out(c.green(`no difference: ${original.parts.length} parts (ids, times and attempt numbers set aside)`))
  else out(c.yellow(`first difference: part ${result.firstDifference + 1}${stepOf(original.parts[result.firstDifference] ?? rerun.parts[result.firstDifference])}`))
  out(`outcome  original: ${outcome(original, c)}   re-run: ${outcome(rerun, c)}`)
  if (rerun.error?.name === 'RecordingDivergedError') {
    out(c.dim('the recorded responses answer the recorded requests only: to see what another prompt or tool result leads to, run it against a model with --model <url>'))
  }
  for (const note of result.notes) out(c.dim(`note: ${note}`))
  if (run.out) out(c.dim(`the re-run is kept in ${run.out}: turnchart show ${run.out} ${rerun.sessionId}`))
}

/** A part on one line, the width of a column (its step shows on the step's start and finish). */
function cell(part: Part | undefined, c: Colors): string {
  if (!part) return '—'
  const boundary = part.type === 'step-start' || part.type === 'step-finish'
  const prefix = part.type === 'text' ? 'text: ' : ''
  return truncate(prefix + formatPart(boundary ? part : ({ ...part, step: undefined } as Part), c), width)
}

/** A tool result as the model was sent it (`{ type: 'json', value }`): its value. */
function modelValue(output: unknown): unknown {
  return typeof output === 'object' && output !== null && 'value' in output ? (output as { value: unknown }).value : output
}

function stepOf(part: Part | undefined): string {
  return part?.step ? ` (step ${part.step}, attempt ${part.attempt ?? 1})` : ''
}

function outcome(side: RerunSide, c: Colors): string {
  const text = side.outcome ?? 'unfinished'
  return side.error && side.outcome !== 'completed' ? `${text} ${c.red(`(${side.error.name}: ${side.error.message})`)}` : text
}
