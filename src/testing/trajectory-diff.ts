/**
 * Two trajectories of one case compared step by step (the n-th step of one with the n-th of
 * the other): text, reasoning, the tool calls (which tools, in order; then each call's input
 * and result), usage, then the turn's outcome and chart path. Ids and times are never compared:
 * two runs of the same answer compare equal. `formatTrajectoryDiff` prints it side by side.
 */
import { canonicalJson } from '../core/input-digest'
import type { Trajectory, TrajectoryStep, TrajectoryToolCall } from './trajectory'

export type TrajectoryField = 'text' | 'reasoning' | 'toolCalls' | 'toolInput' | 'toolOutput' | 'outcome' | 'usage' | 'states' | 'steps'

export interface TrajectoryDifference {
  /** The step (1-based) that differs; 0 for the turn as a whole (`outcome`, `states`). */
  step: number
  /**
   * What differs: `steps` a step one side has and the other not (`a` or `b` null); `toolCalls`
   * the tools called, in order (`a`, `b` their names); `toolInput` / `toolOutput` one call's
   * input or result (`call` its position in the step, `toolName` its tool); `outcome` the
   * outcome with its error; `states` the chart path.
   */
  field: TrajectoryField
  a: unknown
  b: unknown
  /** A tool call's position in its step (0-based), for `toolInput` and `toolOutput`. */
  call?: number
  toolName?: string
}

export interface TrajectoryDiff {
  steps: Array<{ index: number; a: TrajectoryStep | null; b: TrajectoryStep | null; same: boolean }>
  /** Every difference, in step order, the turn's own (step 0) last. */
  differences: TrajectoryDifference[]
  first: TrajectoryDifference | null
  same: boolean
  /** Each side's turn. */
  turnIds: { a: string; b: string }
  /** Each side's outcome with the error that ended it (`completed`, `failed (RetriesExhaustedError: …)`). */
  outcomes: { a: string; b: string }
  /** Each side's chart path. */
  states: { a: string[]; b: string[] }
}

export interface DiffTrajectoriesOptions {
  /** Fields not compared, e.g. `['usage']` against a live model whose token counts always differ. */
  ignore?: readonly TrajectoryField[]
}

/**
 * @example
 * const diff = diffTrajectories(await readTrajectory(engine, before), trajectoryOf(result.rerun))
 * diff.first // { step: 2, field: 'toolInput', call: 0, toolName: 'search', a: { q: 'x' }, b: { q: 'y' } }
 */
export function diffTrajectories(a: Trajectory, b: Trajectory, options: DiffTrajectoriesOptions = {}): TrajectoryDiff {
  const ignored = new Set(options.ignore ?? [])
  const steps: TrajectoryDiff['steps'] = []
  const differences: TrajectoryDifference[] = []
  const add = (difference: TrajectoryDifference) => {
    if (!ignored.has(difference.field)) differences.push(difference)
  }
  for (let i = 0; i < Math.max(a.steps.length, b.steps.length); i++) {
    const [left, right] = [a.steps[i] ?? null, b.steps[i] ?? null]
    const index = (left ?? right)!.index
    const before = differences.length
    if (!left || !right) add({ step: index, field: 'steps', a: left, b: right })
    else compareSteps(index, left, right, add)
    steps.push({ index, a: left, b: right, same: differences.length === before })
  }
  const [outcomeA, outcomeB] = [outcomeOf(a), outcomeOf(b)]
  if (outcomeA !== outcomeB) add({ step: 0, field: 'outcome', a: outcomeA, b: outcomeB })
  if (!same(a.states, b.states)) add({ step: 0, field: 'states', a: a.states, b: b.states })
  return { steps, differences, first: differences[0] ?? null, same: differences.length === 0, turnIds: { a: a.turnId, b: b.turnId }, outcomes: { a: outcomeA, b: outcomeB }, states: { a: a.states, b: b.states } }
}

function compareSteps(step: number, a: TrajectoryStep, b: TrajectoryStep, add: (d: TrajectoryDifference) => void): void {
  if (a.text !== b.text) add({ step, field: 'text', a: a.text, b: b.text })
  if (a.reasoning !== b.reasoning) add({ step, field: 'reasoning', a: a.reasoning, b: b.reasoning })
  const [namesA, namesB] = [a.toolCalls.map((c) => c.toolName), b.toolCalls.map((c) => c.toolName)]
  // Other tools (or another number of calls): comparing call by call would pair unrelated calls.
  if (!same(namesA, namesB)) add({ step, field: 'toolCalls', a: namesA, b: namesB })
  else {
    a.toolCalls.forEach((left, call) => {
      const right = b.toolCalls[call]
      const toolName = left.toolName
      if (!same(left.input, right.input)) add({ step, field: 'toolInput', call, toolName, a: left.input, b: right.input })
      if (!same(resultOf(left), resultOf(right))) add({ step, field: 'toolOutput', call, toolName, a: resultOf(left), b: resultOf(right) })
    })
  }
  if (!same(a.usage, b.usage)) add({ step, field: 'usage', a: a.usage, b: b.usage })
}

/** A call's result as compared: its status with its output or error. */
function resultOf(call: TrajectoryToolCall): { status: string; output?: unknown; error?: string } {
  return { status: call.status, ...('output' in call ? { output: call.output } : {}), ...(call.error !== undefined ? { error: call.error } : {}) }
}

/** `completed`, or `failed (RetriesExhaustedError: …)`: the outcome with the error that ended it. */
function outcomeOf(t: Trajectory): string {
  const outcome = t.outcome ?? 'unfinished'
  return t.error ? `${outcome} (${t.error.name}: ${t.error.message})` : outcome
}

function same(x: unknown, y: unknown): boolean {
  return canonicalJson(x ?? null) === canonicalJson(y ?? null)
}

export interface FormatTrajectoryDiffOptions {
  /** ANSI colours: the first difference yellow, other differing rows red. Default false. */
  color?: boolean
  /** Width of each side's column (default 56). */
  width?: number
}

interface Row {
  left: string
  right: string
  /** The difference the row shows, if any. */
  difference?: TrajectoryDifference
}

/**
 * Both trajectories side by side, a row per step, text, tool call and usage; `*` marks a row
 * that differs, `>` the first difference.
 *
 * @example
 * process.stdout.write(formatTrajectoryDiff(diffTrajectories(a, b), { color: process.stdout.isTTY }))
 */
export function formatTrajectoryDiff(diff: TrajectoryDiff, options: FormatTrajectoryDiffOptions = {}): string {
  const width = options.width ?? 56
  const rows: Row[] = []
  const find = (step: number, field: TrajectoryDifference['field'], call?: number) =>
    diff.differences.find((d) => d.step === step && d.field === field && (call === undefined || d.call === undefined || d.call === call))
  for (const { index, a, b } of diff.steps) {
    rows.push({ left: a ? `step ${index}${finishOf(a)}` : '—', right: b ? `step ${index}${finishOf(b)}` : '—', difference: find(index, 'steps') })
    if (!a || !b) continue
    if (a.text || b.text) rows.push({ left: `  text: ${oneLine(a.text)}`, right: `  text: ${oneLine(b.text)}`, difference: find(index, 'text') })
    if (a.reasoning || b.reasoning) rows.push({ left: `  reasoning: ${oneLine(a.reasoning)}`, right: `  reasoning: ${oneLine(b.reasoning)}`, difference: find(index, 'reasoning') })
    for (let call = 0; call < Math.max(a.toolCalls.length, b.toolCalls.length); call++) {
      const difference = find(index, 'toolCalls') ?? find(index, 'toolInput', call) ?? find(index, 'toolOutput', call)
      rows.push({ left: callText(a.toolCalls[call]), right: callText(b.toolCalls[call]), difference })
    }
    rows.push({ left: `  usage: ${usageText(a.usage)}`, right: `  usage: ${usageText(b.usage)}`, difference: find(index, 'usage') })
  }
  const outcome = find(0, 'outcome')
  const states = find(0, 'states')
  const first = diff.first
  const paint = (code: number, text: string) => (options.color ? `\u001b[${code}m${text}\u001b[0m` : text)
  const lines = [`  ${fit(`a: turn ${diff.turnIds.a}`, width).padEnd(width)} │ b: turn ${diff.turnIds.b}`]
  let firstShown = false
  for (const row of rows) {
    const isFirst = !firstShown && row.difference !== undefined && row.difference === first
    if (isFirst) firstShown = true
    const line = `${isFirst ? '>' : row.difference ? '*' : ' '} ${fit(row.left, width).padEnd(width)} │ ${fit(row.right, width)}`
    lines.push(isFirst ? paint(33, line) : row.difference ? paint(31, line) : line)
  }
  const turnRow = (label: string, difference: TrajectoryDifference | undefined, left: string, right: string) => {
    const isFirst = difference !== undefined && difference === first
    const line = `${isFirst ? '>' : difference ? '*' : ' '} ${fit(`${label}: ${left}`, width).padEnd(width)} │ ${fit(`${label}: ${right}`, width)}`
    lines.push(isFirst ? paint(33, line) : difference ? paint(31, line) : line)
  }
  turnRow('outcome', outcome, diff.outcomes.a, diff.outcomes.b)
  const [pathA, pathB] = pathsFromParting(diff.states.a, diff.states.b)
  turnRow('states', states, pathA, pathB)
  lines.push('')
  lines.push(first ? paint(33, `first difference: ${describe(first)}`) : `no difference: ${diff.steps.length} steps`)
  return `${lines.join('\n')}\n`
}

/** Two chart paths from the state before the first that differs (`… `): a long shared start would fill the column. */
function pathsFromParting(a: string[], b: string[]): [string, string] {
  let shared = 0
  while (shared < a.length && shared < b.length && a[shared] === b[shared]) shared++
  if (shared === a.length && shared === b.length) return [a.join(' → '), b.join(' → ')]
  const from = Math.max(0, shared - 1)
  const show = (path: string[]) => `${from > 0 ? '… ' : ''}${path.slice(from).join(' → ')}`
  return [show(a), show(b)]
}

function describe(d: TrajectoryDifference): string {
  if (d.step === 0) return d.field === 'outcome' ? `the outcome (${String(d.a)} / ${String(d.b)})` : 'the chart path'
  const where = `step ${d.step}`
  switch (d.field) {
    case 'steps':
      return `${where} is only in ${d.a ? 'a' : 'b'}`
    case 'toolCalls':
      return `${where}: the tools called (${(d.a as string[]).join(', ') || 'none'} / ${(d.b as string[]).join(', ') || 'none'})`
    case 'toolInput':
      return `${where}: the input of ${d.toolName} (call ${(d.call ?? 0) + 1})`
    case 'toolOutput':
      return `${where}: the result of ${d.toolName} (call ${(d.call ?? 0) + 1})`
    default:
      return `${where}: its ${d.field}`
  }
}

function finishOf(step: TrajectoryStep): string {
  const retried = step.attempts > 1 ? `, attempt ${step.attempts}` : ''
  return step.finish ? ` (${step.finish}${retried})` : ` (unfinished${retried})`
}

function callText(call: TrajectoryToolCall | undefined): string {
  if (!call) return '  —'
  const result = call.status === 'completed' ? ` → ${compact(call.output)}` : call.status === 'error' ? ` → error: ${oneLine(call.error ?? '')}` : ` (${call.status})`
  return `  ${call.toolName}(${compact(call.input)})${result}`
}

function usageText(usage: TrajectoryStep['usage']): string {
  return usage ? `${usage.inputTokens} in / ${usage.outputTokens} out` : '—'
}

function compact(value: unknown): string {
  return value === undefined ? '' : typeof value === 'string' ? oneLine(value) : canonicalJson(value)
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

function fit(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`
}
