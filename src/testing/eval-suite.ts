/**
 * Eval suites: stored turns re-run (against their recorded responses, or another model, system
 * prompt or tools) and scored. A suite is a JSON file (`turnchart eval`) or the same object from
 * code (`runSuite`); each case names a stored turn by id, each scorer says pass or fail and why.
 */
import type { ToolSet } from 'ai'
import type { EngineModel } from '../config/options'
import { jsonSchemaValidator } from '../tools/json-schema-validator'
import { openStore } from '../engine/open-store'
import { storeSource, type RecordingSource } from './recording-source'
import { rerunTurn } from './rerun-turn'
import { trajectoryOf, type Trajectory } from './trajectory'
import { diffTrajectories, type TrajectoryDiff } from './trajectory-diff'

/** What one scorer decided about one case. */
export interface ScoreOutcome {
  pass: boolean
  /** Why: what was expected and what the re-run did. */
  reason: string
}

/** What a function scorer is given: the case's original turn and its re-run, as trajectories. */
export interface ScorerInput {
  original: Trajectory
  rerun: Trajectory
  case: EvalCase
}

export type Scorer =
  /** The re-run's tool calls by name, in order: exactly these, or these in this order among others (`subset`). */
  | { type: 'toolCalls'; expected: string[]; match?: 'exact' | 'subset'; name?: string }
  /** Each text must appear in the re-run's final answer. */
  | { type: 'includes'; text: string[]; name?: string }
  /** No text may appear in the re-run's final answer. */
  | { type: 'excludes'; text: string[]; name?: string }
  /** The final answer parsed as JSON must match this JSON Schema. */
  | { type: 'jsonSchema'; schema: unknown; name?: string }
  /** The app's own check (in a JSON suite: `module`, a file exporting it as `export` or `default`). */
  | { type: 'function'; name: string; score: (input: ScorerInput) => ScoreOutcome | Promise<ScoreOutcome> }

export interface EvalCase {
  /** Shown in reports; the turn id when absent. */
  name?: string
  turn: string
  /** The case's database, when not the suite's. */
  database?: string
  /** Scored by these as well as the suite's. */
  scorers?: Scorer[]
}

export interface EvalSuite {
  name: string
  /** Path (SQLite) or postgres:// URL of the database holding the cases' turns. */
  database?: string
  /** Re-run against this model; by default against the turns' recorded responses. */
  model?: EngineModel
  system?: string
  /** The app's tools run for real; by default the recorded results are used. */
  tools?: ToolSet
  /** Every case is scored by these. */
  scorers?: Scorer[]
  cases: EvalCase[]
}

export interface SuiteOptions {
  /** Cases re-run at once (default 2). */
  concurrency?: number
  /** Stop starting cases once the re-runs have used this many tokens (input + output); the rest are skipped. */
  budget?: { tokens?: number }
  /** Told as each case starts and ends: progress (the CLI writes it to stderr). */
  onProgress?: (event: { case: string; done: number; total: number; result?: CaseResult }) => void
  /** Opens a case's database as a source (default: `openStore`; the CLI opens it read-only). */
  open?: (database: string) => Promise<{ source: RecordingSource; close(): Promise<void> }>
}

export interface ScoreResult extends ScoreOutcome {
  scorer: string
}

export interface CaseResult {
  name: string
  turnId: string
  status: 'passed' | 'failed' | 'error' | 'skipped'
  scores: ScoreResult[]
  /** The re-run did not finish scoring: its error's message. */
  error?: string
  original?: Trajectory
  rerun?: Trajectory
  diff?: TrajectoryDiff
  usage: { inputTokens: number; outputTokens: number }
  durationMs: number
}

export interface SuiteResult {
  suite: string
  runId: string
  startedAt: string
  cases: CaseResult[]
  passed: number
  /** Cases whose scores failed. */
  failed: number
  /** Cases that could not be scored: their re-run threw or diverged from its recording. */
  errors: number
  /** Cases not run: the token budget was spent. */
  skipped: number
  /** Passing scores over all scores (0..1); 0 when nothing was scored. */
  score: number
  usage: { inputTokens: number; outputTokens: number }
}

/** A suite without a database for a case, or a case whose turn cannot be re-run. */
export class EvalSuiteError extends Error {
  override readonly name = 'EvalSuiteError'
  constructor(
    message: string,
    readonly suite: string,
  ) {
    super(message)
  }
}

/**
 * @example
 * const result = await runSuite({ name: 'search', database: './agent.db', cases: [{ turn: 'trn_01…', scorers: [{ type: 'toolCalls', expected: ['search'] }] }] })
 * result.failed // 0
 */
export async function runSuite(suite: EvalSuite, options: SuiteOptions = {}): Promise<SuiteResult> {
  const startedAt = new Date()
  const open = options.open ?? (async (database: string) => {
    const opened = await openStore(database)
    return { source: storeSource(opened.store), close: () => opened.close() }
  })
  const sources = new Map<string, Promise<{ source: RecordingSource; close(): Promise<void> }>>()
  const sourceOf = (database: string) => {
    if (!sources.has(database)) sources.set(database, open(database))
    return sources.get(database)!
  }
  const results: CaseResult[] = new Array(suite.cases.length)
  const usage = { inputTokens: 0, outputTokens: 0 }
  let next = 0
  let done = 0
  const overBudget = () => options.budget?.tokens !== undefined && usage.inputTokens + usage.outputTokens >= options.budget.tokens
  const worker = async () => {
    while (next < suite.cases.length) {
      const index = next++
      const evalCase = suite.cases[index]
      const name = evalCase.name ?? evalCase.turn
      options.onProgress?.({ case: name, done, total: suite.cases.length })
      const result = overBudget() ? skipped(evalCase, name) : await runCase(suite, evalCase, name, sourceOf)
      usage.inputTokens += result.usage.inputTokens
      usage.outputTokens += result.usage.outputTokens
      results[index] = result
      options.onProgress?.({ case: name, done: ++done, total: suite.cases.length, result })
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker))
  } finally {
    for (const opened of sources.values()) await (await opened.catch(() => undefined))?.close()
  }
  const scores = results.flatMap((r) => r.scores)
  return {
    suite: suite.name,
    runId: startedAt.toISOString().replace(/[:.]/g, '-'),
    startedAt: startedAt.toISOString(),
    cases: results,
    passed: results.filter((r) => r.status === 'passed').length,
    failed: results.filter((r) => r.status === 'failed').length,
    errors: results.filter((r) => r.status === 'error').length,
    skipped: results.filter((r) => r.status === 'skipped').length,
    score: scores.length === 0 ? 0 : scores.filter((s) => s.pass).length / scores.length,
    usage,
  }
}

function skipped(evalCase: EvalCase, name: string): CaseResult {
  return { name, turnId: evalCase.turn, status: 'skipped', scores: [], error: 'the token budget was spent', usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 0 }
}

async function runCase(suite: EvalSuite, evalCase: EvalCase, name: string, sourceOf: (database: string) => ReturnType<NonNullable<SuiteOptions['open']>>): Promise<CaseResult> {
  const started = Date.now()
  const base = { name, turnId: evalCase.turn }
  try {
    const database = evalCase.database ?? suite.database
    if (!database) throw new EvalSuiteError(`case ${name} has no database: give the suite or the case one`, suite.name)
    const { source } = await sourceOf(database)
    const result = await rerunTurn(source, evalCase.turn, {
      ...(suite.model ? { model: suite.model } : {}),
      ...(suite.tools ? { tools: suite.tools } : {}),
      ...(suite.system !== undefined ? { system: suite.system } : {}),
    })
    const original = trajectoryOf(result.original)
    const rerun = trajectoryOf(result.rerun)
    const compared = { original, rerun, diff: diffTrajectories(original, rerun), usage: rerun.usage }
    // A re-run that left its recording (another system prompt, tool result, number of steps)
    // says nothing about the model: reported as that, with its reason, not as scorers' misses.
    if (rerun.error?.name === 'RecordingDivergedError') {
      return { ...base, status: 'error', scores: [], error: `the re-run diverged from the recording: ${rerun.error.message}`, ...compared, durationMs: Date.now() - started }
    }
    const input: ScorerInput = { original, rerun, case: evalCase }
    const scores: ScoreResult[] = []
    for (const scorer of [...(suite.scorers ?? []), ...(evalCase.scorers ?? [])]) {
      scores.push({ scorer: scorerName(scorer), ...(await score(scorer, input)) })
    }
    const failedRun = rerun.outcome !== 'completed' && rerun.error ? `the re-run ended ${rerun.outcome ?? 'unfinished'}: ${rerun.error.name}: ${rerun.error.message}` : undefined
    if (failedRun && scores.length === 0) scores.push({ scorer: 'outcome', pass: false, reason: failedRun })
    return {
      ...base,
      status: scores.every((s) => s.pass) ? 'passed' : 'failed',
      scores,
      ...compared,
      durationMs: Date.now() - started,
    }
  } catch (error) {
    return { ...base, status: 'error', scores: [], error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), usage: { inputTokens: 0, outputTokens: 0 }, durationMs: Date.now() - started }
  }
}

export function scorerName(scorer: Scorer): string {
  if (scorer.name) return scorer.name
  switch (scorer.type) {
    case 'toolCalls': return `toolCalls ${scorer.match ?? 'exact'} [${scorer.expected.join(', ')}]`
    case 'includes': return `includes ${JSON.stringify(scorer.text)}`
    case 'excludes': return `excludes ${JSON.stringify(scorer.text)}`
    case 'jsonSchema': return 'jsonSchema'
    default: return 'function'
  }
}

/** One scorer on one case. */
export async function score(scorer: Scorer, input: ScorerInput): Promise<ScoreOutcome> {
  const { rerun } = input
  switch (scorer.type) {
    case 'toolCalls': {
      const called = rerun.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName))
      const pass = scorer.match === 'subset' ? inOrder(scorer.expected, called) : JSON.stringify(called) === JSON.stringify(scorer.expected)
      return { pass, reason: `expected ${scorer.match === 'subset' ? 'among the calls, in order' : 'the calls'} [${scorer.expected.join(', ')}], called [${called.join(', ')}]` }
    }
    case 'includes': {
      const missing = scorer.text.filter((t) => !rerun.finalText.includes(t))
      return { pass: missing.length === 0, reason: missing.length === 0 ? 'every text appears' : `missing from the answer: ${missing.map((t) => JSON.stringify(t)).join(', ')}` }
    }
    case 'excludes': {
      const present = scorer.text.filter((t) => rerun.finalText.includes(t))
      return { pass: present.length === 0, reason: present.length === 0 ? 'no forbidden text appears' : `in the answer: ${present.map((t) => JSON.stringify(t)).join(', ')}` }
    }
    case 'jsonSchema': {
      let value: unknown
      try {
        value = JSON.parse(rerun.finalText.trim().replace(/^```(?:json)?\n?|\n?```$/g, ''))
      } catch {
        return { pass: false, reason: 'the answer is not JSON' }
      }
      const check = jsonSchemaValidator(scorer.schema)(value)
      return check.ok ? { pass: true, reason: 'the answer matches the schema' } : { pass: false, reason: `the answer does not match the schema: ${check.message}` }
    }
    case 'function':
      return scorer.score(input)
  }
}

/** `expected` appears in `called` in order, other calls between allowed. */
function inOrder(expected: string[], called: string[]): boolean {
  let at = 0
  for (const name of called) if (name === expected[at]) at++
  return at === expected.length
}
