/**
 * `rerunTurn(source, turnId)`: runs a stored turn again in a scratch database and sets its
 * parts beside the original's. By default against its recorded responses (`recordedModel`)
 * with its recorded tool results, so an unchanged turn reproduces exactly; with another model,
 * system prompt or live tools it is an eval of that change on real traffic. `turnchart rerun`
 * prints it.
 *
 * The scratch database gets the session's history before the turn, then the turn's prompt
 * with its stored options (model name, system prompt, tools, call settings). What the app's
 * engine options decided and the store does not keep (the context limit, the retry limit) is
 * read back from the turn's decisions (rerun-settings.ts); the recorded approvals and denials
 * are made again.
 */
import fs from 'node:fs'
import type { ToolSet } from 'ai'
import type { EngineModel, EngineOptions } from '../config/options'
import type { PromptInput } from '../conversation/user-input'
import { InvalidArgumentError } from '../core/errors'
import type { MessageWithParts, Part, PromptOptions, StopCondition } from '../core/types'
import { createEngine } from '../engine/create-engine'
import type { Engine } from '../engine/engine'
import { openStore } from '../engine/open-store'
import { defaultFailurePolicies, type RetryPolicy } from '../policy/decide-failure'
import { defaultRetryOptions, type RetryOptions } from '../policy/retry-delay'
import { MemoryStore } from '../store/memory/memory-store'
import { comparableParts, firstDifference } from './comparable-parts'
import { recordedModelOf } from './recorded-model'
import { recordedTools } from './recorded-tools'
import { readRecordedTurn, type RecordedTurn } from './recorded-turn'
import type { RecordingSource } from './recording-source'
import { rerunSettings } from './rerun-settings'
import type { SpecificationVersion } from './stored-stream'
import { answerParts, recordedSide, type TrajectorySource } from './trajectory'
import { liveAfterDivergence, type Divergence } from './live-after-divergence'
import type { ToolDrift } from './tool-drift'

export interface RerunOptions {
  /** The model to run against (an eval); default: the turn's recorded responses. */
  model?: EngineModel
  /** The tools, run for real; default: the recorded results, not run. */
  tools?: ToolSet
  /** Another system prompt than the turn's. */
  system?: string
  /** A SQLite file (that does not exist yet) to keep the scratch database in; default: in memory. */
  database?: string
  /** The recorded model's specification version (default `'v3'`). */
  specificationVersion?: SpecificationVersion
  /**
   * What the run does where it leaves the recording (another system prompt, tool result or
   * number of steps): `'stop'` (default) fails with `RecordingDivergedError`; `'live'` goes on
   * with `liveModel` from that call (a what-if run; `diverged` says where).
   */
  afterDivergence?: 'stop' | 'live'
  /** The model that answers from the divergence on (`afterDivergence: 'live'`). */
  liveModel?: EngineModel
  /**
   * With the recorded model and live `tools`: `'continue'` goes on past a tool result that
   * differs from the recorded one (the recorded answers go on) and reports each in
   * `toolDrift`; `'stop'` (default) fails there with `RecordingDivergedError`.
   */
  toolDrift?: 'stop' | 'continue'
}

/**
 * One side of the comparison: a turn, its outcome, its states and the parts it produced (the
 * re-run's session id is the original's, in the scratch database); what a trajectory is read from.
 */
export type RerunSide = TrajectorySource

export interface RerunResult {
  original: RerunSide
  rerun: RerunSide
  /** Model calls the recording holds. */
  recordedCalls: number
  /**
   * Index of the first part that differs, -1 when the parts are the same. Ids, times and
   * attempt numbers are set aside: a retry shows in the states, and a failed attempt's half
   * answer still shows as its parts.
   */
  firstDifference: number
  /** Indexes of every part that differs, compared as `firstDifference` compares them. */
  differences: number[]
  /** True when the parts and the outcome are the same. */
  identical: boolean
  /** What could not be reproduced from the stored turn, in a sentence each. */
  notes: string[]
  /** Where the live model took over (`afterDivergence: 'live'`), null when the run never left the recording. */
  diverged: Divergence | null
  /** Each live tool result that differed from the recorded one (`toolDrift: 'continue'`), in order. */
  toolDrift: ToolDrift[]
}

/** A retry that waited seconds for a provider needs no wait against a recording. */
const recordedRetryWaitMs = 10

/**
 * @example
 * const result = await rerunTurn(engine, turnId, { system: 'Be brief.', model: otherModel })
 * result.firstDifference // 3: the fourth part differs
 */
export async function rerunTurn(source: RecordingSource, turnId: string, options: RerunOptions = {}): Promise<RerunResult> {
  const recording = await readRecordedTurn(source, turnId)
  const prompt = rerunnablePrompt(recording, turnId)
  const settings = rerunSettings(recording, recording.transitions, await readInput(source, turnId))
  if (options.afterDivergence === 'live' && (!options.liveModel || options.model)) {
    throw new InvalidArgumentError('liveModel', options.liveModel, "a model to go on with past the divergence (afterDivergence: 'live'), and no `model` (the recorded one answers until then)")
  }
  const answering = rerunModel(recording, options)
  const decisions = recordedDecisions(recording)
  const tools = options.tools ?? recordedTools(recording, new Set(decisions.keys()))
  const engine = await rerunEngine(recording, options, settings, answering.model, tools)
  try {
    const turn = engine.prompt(recording.turn.sessionId, promptInput(prompt), rerunPromptOptions(recording, options))
    // Where the recording was cut off (an abort, a crash), the re-run is aborted too.
    answering.onCutOff(() => turn.abort())
    const unsubscribe = decideAsRecorded(engine, turn.id, decisions)
    const result = await turn.done
    unsubscribe()
    const messages = (await engine.messages(recording.turn.sessionId)).filter((m) => m.info.turnId === turn.id)
    const rerun: RerunSide = {
      turnId: turn.id,
      sessionId: recording.turn.sessionId,
      outcome: result.outcome,
      error: result.error ? result.error.toJSON() : null,
      states: (await engine.transitions(turn.id)).map((t) => t.to),
      parts: answerParts(messages),
    }
    return { ...compareRuns(recording, rerun), notes: settings.notes, diverged: answering.diverged(), toolDrift: answering.toolDrift }
  } finally {
    await engine.close()
  }
}

/** The recorded turn's prompt, when the turn can be re-run (its prompt and its transition log are stored). */
function rerunnablePrompt(recording: RecordedTurn, turnId: string): MessageWithParts {
  const prompt = recording.own.find((m) => m.info.role === 'user')
  if (!prompt) throw new InvalidArgumentError('turnId', turnId, 'a turn whose prompt is stored')
  if (recording.turn.outcome && recording.transitions.length === 0) {
    throw new InvalidArgumentError('turnId', turnId, 'a turn whose transition log is stored (this one was pruned: its model calls cannot be replayed)')
  }
  return prompt
}

/**
 * The model the re-run calls: the app's, or the recording answered call by call (past a
 * divergence, the live model when asked); where the recording was cut off it aborts the re-run.
 */
function rerunModel(recording: RecordedTurn, options: RerunOptions) {
  let abortRerun = () => {}
  let diverged: Divergence | null = null
  const toolDrift: ToolDrift[] = []
  const recorded = () =>
    recordedModelOf(recording, {
      specificationVersion: options.specificationVersion ?? (options.liveModel ? versionOf(options.liveModel) : undefined),
      onCutOff: () => abortRerun(),
      ...(options.toolDrift === 'continue' ? { onToolDrift: (drift: ToolDrift) => toolDrift.push(drift) } : {}),
    })
  const live = () => liveAfterDivergence(recorded(), options.liveModel!, (divergence) => void (diverged = divergence))
  const model = options.model ?? (options.afterDivergence === 'live' ? live() : recorded())
  return {
    model,
    toolDrift,
    diverged: () => diverged,
    onCutOff: (abort: () => void) => void (abortRerun = abort),
  }
}

/** An engine on a scratch database holding the session's history, with the recorded turn's settings. */
async function rerunEngine(recording: RecordedTurn, options: RerunOptions, settings: ReturnType<typeof rerunSettings>, model: EngineModel, tools: ToolSet) {
  const name = recording.options?.model ?? 'default'
  const retry: RetryOptions = { ...defaultRetryOptions, ...(settings.maxAttempts !== undefined ? { maxAttempts: settings.maxAttempts } : {}) }
  // Retry waits are cut short only when every answer comes from the recording.
  const againstRecording = options.model === undefined && options.afterDivergence !== 'live'
  const { compaction, limits } = settings
  return createEngine({
    database: await scratchDatabase(options.database, recording),
    model,
    ...(name !== 'default' ? { models: { [name]: model } } : {}),
    tools,
    ...(limits ? { limits } : {}),
    compaction: { auto: compaction.auto, ...(compaction.maxPerTurn !== undefined ? { maxPerTurn: compaction.maxPerTurn } : {}), ...(limits ? { reserved: 0 } : {}) },
    ...(settings.maxSteps !== undefined ? { maxSteps: settings.maxSteps } : {}),
    ...(settings.stopAtBoundary !== undefined ? { stopWhen: stopAtBoundary(settings.stopAtBoundary) } : {}),
    retry,
    ...(againstRecording ? { retryPolicy: shortWaits(retry) } : {}),
  } satisfies EngineOptions)
}

/** The recorded turn's prompt options (its settings, model name, system prompt and tools), the re-run's system prompt over them. */
function rerunPromptOptions(recording: RecordedTurn, options: RerunOptions): PromptOptions {
  const stored = recording.options
  return {
    ...(stored?.settings ?? {}),
    model: stored?.model ?? 'default',
    ...(options.system !== undefined ? { system: options.system } : stored?.system !== undefined ? { system: stored.system } : {}),
    ...(stored?.tools ? { tools: stored.tools } : {}),
  }
}

/** The recorded decisions, made again when the re-run asks; a call the recording never decided is denied. Returns the unsubscribe. */
function decideAsRecorded(engine: Engine, turnId: string, decisions: ReturnType<typeof recordedDecisions>): () => void {
  return engine.subscribe((event) => {
    if (event.type !== 'approval.requested' || event.turnId !== turnId) return
    for (const call of event.calls) {
      const decision = decisions.get(call.callId)
      const by = decision?.by !== undefined ? { by: decision.by } : {}
      const made = decision?.approved
        ? engine.approve(event.turnId, call.callId, by)
        : engine.deny(event.turnId, call.callId, { reason: decision?.reason ?? 'the recording has no decision for this call', ...by })
      made.catch(() => {}) // the turn may have ended meanwhile; its outcome says so
    }
  })
}

/** The recorded run beside the re-run: where their parts first differ (attempts aside), and which differ. */
function compareRuns(recording: RecordedTurn, rerun: RerunSide): Omit<RerunResult, 'notes' | 'diverged' | 'toolDrift'> {
  const original: RerunSide = recordedSide(recording)
  const [left, right] = [withoutAttempts(original.parts), withoutAttempts(rerun.parts)]
  const difference = firstDifference(left, right)
  const differences = [...Array(Math.max(left.length, right.length)).keys()].filter((i) => JSON.stringify(left[i]) !== JSON.stringify(right[i]))
  return {
    original,
    rerun,
    recordedCalls: recording.calls.length,
    firstDifference: difference,
    differences,
    identical: difference === -1 && original.outcome === rerun.outcome,
  }
}

function versionOf(model: EngineModel): SpecificationVersion {
  return (model as { specificationVersion?: string }).specificationVersion === 'v4' ? 'v4' : 'v3'
}

function withoutAttempts(parts: Part[]) {
  return comparableParts(parts).map(({ attempt: _attempt, ...part }) => part)
}

async function readInput(source: RecordingSource, turnId: string): Promise<{ autoCompact?: boolean; maxCompactions?: number; maxSteps?: number } | undefined> {
  const input = (await source.turnInput?.(turnId)) as { autoCompact?: boolean; maxCompactions?: number; maxSteps?: number } | undefined
  if (input) return input
  const config = source.config
  if (!config) return undefined
  return { autoCompact: config.compaction?.auto, maxCompactions: config.compaction?.maxPerTurn, maxSteps: config.maxSteps }
}

/** The approvals and denials of the recording, by call id. */
function recordedDecisions(recording: RecordedTurn): Map<string, { approved: boolean; reason?: string; by?: string }> {
  const decisions = new Map<string, { approved: boolean; reason?: string; by?: string }>()
  for (const row of recording.transitions) {
    const callId = row.payload.callId
    if (typeof callId !== 'string') continue
    // Who decided, from the receipt the decision logged: the re-run's receipts name the same person.
    const by = (row.payload.receipt as { by?: unknown } | undefined)?.by
    const who = typeof by === 'string' ? { by } : {}
    if (row.event === 'tool.approved') decisions.set(callId, { approved: true, ...who })
    if (row.event === 'tool.denied') decisions.set(callId, { approved: false, ...(typeof row.payload.reason === 'string' ? { reason: row.payload.reason } : {}), ...who })
  }
  return decisions
}

/** A stop condition that holds at the n-th step boundary, where the recorded turn's did (it is asked once per boundary). */
function stopAtBoundary(n: number): StopCondition {
  let asked = 0
  return () => ++asked >= n
}

/** The default retry decisions, with waits cut short. */
function shortWaits(options: RetryOptions): RetryPolicy {
  const retry = defaultFailurePolicies(options).retry
  return (question) => {
    const plan = retry(question)
    return plan.action === 'retry' ? { ...plan, delayMs: Math.min(plan.delayMs, recordedRetryWaitMs) } : plan
  }
}

/** A database holding the session's history before the turn (a `MemoryStore`, or the SQLite file named). */
async function scratchDatabase(file: string | undefined, recording: RecordedTurn): Promise<MemoryStore | string> {
  if (file !== undefined && fs.existsSync(file)) throw new InvalidArgumentError('database', file, 'a file that does not exist yet (the scratch database is created there)')
  const opened = await openStore(file ?? new MemoryStore())
  try {
    const now = Date.now()
    await opened.store.sessions.insert({ id: recording.turn.sessionId, title: null, time: { created: now, updated: now } })
    for (const message of recording.history) {
      await opened.store.messages.upsert(message.info)
      await opened.store.messages.upsertParts(message.parts, now)
    }
  } finally {
    await opened.close()
  }
  return file ?? (opened.store as MemoryStore)
}

/** The stored prompt as `engine.prompt` takes it: its text, or its text, image and file parts. */
function promptInput(message: MessageWithParts): PromptInput {
  const [only] = message.parts
  if (message.parts.length === 1 && only.type === 'text') return only.text
  return message.parts.flatMap((part): Exclude<PromptInput, string> => {
    if (part.type === 'text') return [{ type: 'text' as const, text: part.text }]
    if (part.type !== 'file') return []
    const data = part.url ?? part.data ?? ''
    if (part.image) return [{ type: 'image' as const, image: data, ...(part.mediaType ? { mediaType: part.mediaType } : {}) }]
    return [{ type: 'file' as const, data, mediaType: part.mediaType ?? 'application/octet-stream', ...(part.filename ? { filename: part.filename } : {}) }]
  })
}
