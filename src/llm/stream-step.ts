/**
 * One step: one LLM call. Streams the model through `modelStream` (the model's `doStream`
 * directly, V3 or V4; no SDK retries, tools without `execute`, so
 * retries and tool runs are the chart's), maps its events to parts in the database through the
 * part writer, and resolves with the event the chart decides on: `step.finished` or
 * `step.failed`. It never rejects.
 */
import type { StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { CircuitOpenError, DoomLoopError, ModelHeldError, HookError, StreamIdleTimeoutError, serializeError, type SerializedError } from '../core/errors'
import { canonicalJson } from '../core/input-digest'
import { detectDoomLoop, doomLoopWindow, type ToolCallSignature } from '../policy/doom-loop'
import { newId } from '../core/ids'
import { decideFailure, isProvidersFailure } from '../policy/decide-failure'
import { isUsageOverflow } from '../policy/overflow'
import type { LanguageModelUsage, ModelMessage, ToolSet } from 'ai'
import type { StructuredOutput, TurnSettings } from '../core/types'
import type { FailurePolicies } from '../policy/decide-failure'
import type { DoomLoopOptions } from '../policy/doom-loop'
import type { ModelLimits } from '../policy/overflow'
import type { Redactor } from '../core/secrets/redact-secrets'
import type { Telemetry } from '../telemetry/telemetry'
import type { ProviderLanguageModel } from './language-model'
import type { Pricing } from './usage'
import type { MessageInfo, MessageWithParts, Part, PartProviderMetadata, TextPart, Tokens, ToolPart } from '../core/types'
import { failCall, requireApproval, runCall, stopCall } from '../tools/tool-part'
import { toolOptions } from '../tools/tool-options'
import { startIdleTimer } from './idle-timer'
import type { StateExit } from '../core/state-exit'
import { modelStream, type ModelStreamEvent, type ModelStreamRequest } from './model-stream'
import type { ProviderPromptCache } from './provider-prompt'
import { addTokens, stepCost, toTokens } from './usage'
import { attemptOnModel, fallbackAfter, modelAsked, modelFor, type NamedModel } from './model-fallback'
import type { CircuitAdmission } from './circuit-rule'
import type { ModelCircuits } from './model-circuits'
import type { ModelRateLimits, RateTicket } from './model-rate-limits'

/**
 * What a step needs from its turn: the settings it calls the model with, the history, the
 * assistant message its parts go to, and a part sink (the store's part writer). The turn's
 * scope is one; a test can pass a small fake.
 */
export interface StepScope {
  readonly turnId: string
  readonly sessionId: string
  readonly config: {
    model: ProviderLanguageModel
    /** The turn's models when it named a list (fallback models): `[0]` is `model`. */
    models?: readonly NamedModel[]
    /** The registered name of `model`: its circuit's key. */
    modelName?: string
    /** The models' circuits: asked before the request, told how the provider answered. */
    circuits?: Pick<ModelCircuits, 'admit' | 'failed' | 'answered' | 'released'>
    /** The models' rate limits: a request is counted before it is sent, and from its answer's start once it began. */
    rateLimits?: Pick<ModelRateLimits, 'admit' | 'answered'>
    system: string | undefined
    tools: ToolSet
    call: Omit<TurnSettings, 'maxSteps'>
    limits: ModelLimits | undefined
    compaction: { reserved: number | undefined }
    streamIdleTimeoutMs: number
    pricing: Pricing | undefined
    doomLoop: DoomLoopOptions
    failure: FailurePolicies
    telemetry: Pick<Telemetry, 'modelCall' | 'recordOutputs'>
    redactor: Pick<Redactor, 'value'>
    /** Told when a tool's `needsApproval` throws (the call then waits for a human). */
    onHookError?(error: unknown): void
    /** Structured output: its `responseFormat` goes with every call; a final answer is checked at the step gate. */
    output?: StructuredOutput
    /** How long a call waits for approval (a tool's own `approvalTimeoutMs` wins); undefined: no limit. */
    approvalTimeoutMs?: number | undefined
  }
  /** The turn's messages in memory. */
  readonly messages: StepMessages
  readonly writer: { add(part: Part, message?: MessageInfo): void; append(part: TextPart, delta: string): void; changed(part: Part): void }
}

/** What a step reads and places among its turn's messages. */
export interface StepMessages {
  /** The messages to send: the history and this turn's finished attempts. */
  modelMessages(): ModelMessage[]
  /** Their provider form from earlier steps (the same message objects are converted once). */
  readonly promptCache?: ProviderPromptCache
  /** The assistant message new parts go to (opened on first use). */
  assistantMessage(): MessageWithParts
  /** This turn's assistant messages (the doom-loop check reads their tool calls). */
  assistantMessages(): MessageWithParts[]
  /** Adds a part to a message; the message's info when the part is its first (then written with it). */
  placePart(message: MessageWithParts, part: Part): MessageInfo | undefined
  saveMessage(info: MessageInfo): void
  /** Set at the end of a finished step: its tool parts, which the tool runner runs. */
  stepTools: ToolPart[]
}

/**
 * What counts a step's model calls and what they used: the run tree's budget, which the step
 * gate checks before the next call.
 */
export interface StepMeter {
  /** A model call the step gate did not admit itself (a retry's attempt). */
  called(): void
  /** What a finished step used. */
  spend(usage: { tokens: Tokens; cost: number }): void
}

/** What one step runs on: the turn's scope, and the meter its model calls count on (none: not counted). */
export interface StepRun {
  scope: StepScope
  meter?: StepMeter
}

/**
 * Runs one step and reports its outcome as a chart event.
 *
 * @example
 * const event = await streamStep({ scope, meter: tree }, { turnId, step: 1, attempt: 1, waitedMs: 0 }, exit)
 */
export async function streamStep({ scope, meter }: StepRun, input: StreamStepInput, exit: StateExit): Promise<TurnEvent> {
  const messages = scope.messages.modelMessages()
  const asked = await askModel(scope, input, messages)
  if ('event' in asked) return asked.event
  const { circuit, ticket } = asked
  // (the step gate admitted the step's first call; a retry's attempt is one more call the budget counts)
  if (input.attempt > 1) meter?.called()
  const state = new StepState(scope, scope.messages.assistantMessage(), input)
  const idle = startIdleTimer(exit, scope.config.streamIdleTimeoutMs)
  const span = modelCallSpan(scope, input, messages)
  // (when the provider began to answer: its rate limit counts the request from then)
  let answeredAt: number | undefined
  try {
    await modelStream(await stepRequest(scope, input, messages, idle), (event) => {
      answeredAt ??= Date.now()
      return state.hear(event, idle.signal)
    })
  } catch (error) {
    state.failure = error
  } finally {
    idle.stop()
  }
  if (ticket) await scope.config.rateLimits?.answered(ticket, answeredAt ?? Date.now(), state.stepTokens && state.stepTokens.input + state.stepTokens.output)
  if (state.failure === undefined && idle.signal.aborted) state.failure = idle.signal.reason
  span?.end(spanEnd(scope, state, exit))
  if (exit.left) {
    // The chart left `streaming` (abort or stop): the turn's end closes what is open.
    state.closeOpenText()
    await tellCircuit(scope, circuit, 'released')
    return { type: 'step.failed', error: scope.config.redactor.value(serializeError(exit.reason)), overflow: false, retryDelayMs: null }
  }
  if (state.failure !== undefined) {
    // A failed attempt: its text stays, closed; its tool calls never run.
    state.closeOpenText()
    state.discardTools()
    const reason = idle.signal.aborted && StreamIdleTimeoutError.isInstance(idle.signal.reason) ? idle.signal.reason : state.failure
    const failed = failedEvent(scope, input, reason)
    await tellCircuit(scope, circuit, failed.providers ? 'failed' : 'answered', failed.retryAt)
    return failed.event
  }
  await tellCircuit(scope, circuit, 'answered')
  return finishedEvent(scope, state, meter)
}

/**
 * Whether the attempt may send its request: its model's circuit (open: the step fails, and falls
 * back or waits) and then its rate limit (passed: `step.throttled`, and a probe it took is let
 * go); or the circuit and the rate limit's count it goes with.
 */
async function askModel(scope: StepScope, input: StreamStepInput, messages: ModelMessage[]): Promise<{ circuit?: AttemptCircuit; ticket?: RateTicket } | { event: TurnEvent }> {
  const circuit = await askCircuit(scope, input)
  if (circuit && !circuit.admission.send) return { event: failedEvent(scope, input, notSent(circuit.model, circuit.admission)).event }
  const model = attemptModelName(scope, input)
  const limited = model === undefined ? undefined : await scope.config.rateLimits?.admit(model, () => estimatedTokens(scope, messages))
  if (!limited || limited.send) return { circuit, ticket: limited?.ticket }
  await tellCircuit(scope, circuit, 'released')
  return { event: { type: 'step.throttled', model: model!, until: limited.until } }
}

/** A request's tokens before it is sent: a quarter of its prompt's characters (the provider's count corrects it after). */
function estimatedTokens(scope: StepScope, messages: ModelMessage[]): number {
  return Math.ceil(((scope.config.system?.length ?? 0) + JSON.stringify(messages).length) / 4)
}

/** The registered name of the model an attempt asks (its circuit's and rate limit's key). */
const attemptModelName = (scope: StepScope, input: StreamStepInput) => modelAsked(scope.config, input)?.name ?? scope.config.modelName

/** The circuit of the model an attempt asks, and whether it may ask it (undefined: circuits are off). */
interface AttemptCircuit {
  model: string
  admission: CircuitAdmission
}

/** Why a request was not sent: the provider holds the model (a `retry-after`), or its circuit is open. */
function notSent(model: string, admission: { until: number; held?: true }): ModelHeldError | CircuitOpenError {
  return admission.held ? new ModelHeldError(model, admission.until) : new CircuitOpenError(model, admission.until)
}

async function askCircuit(scope: StepScope, input: StreamStepInput): Promise<AttemptCircuit | undefined> {
  const { circuits } = scope.config
  const model = attemptModelName(scope, input)
  if (!circuits || model === undefined) return undefined
  return { model, admission: await circuits.admit(model) }
}

/**
 * Tells the circuit how the provider did: a failure of its kind counts; an answer (a finish, or
 * the caller's own error) closes a half-open circuit whose probe this attempt was; a probe
 * stopped without an answer lets another request probe.
 */
async function tellCircuit(scope: StepScope, circuit: AttemptCircuit | undefined, outcome: 'failed' | 'answered' | 'released', retryAt?: number): Promise<void> {
  const { circuits } = scope.config
  if (!circuits || !circuit) return
  const origin = { sessionId: scope.sessionId, turnId: scope.turnId }
  if (outcome === 'failed') await circuits.failed(circuit.model, origin, retryAt)
  else if (circuit.admission.send && circuit.admission.probe) await (outcome === 'answered' ? circuits.answered(circuit.model, origin) : circuits.released(circuit.model, origin))
}

/** The model call's request: the turn's settings, the history, its tools, the idle timer on every chunk. */
async function stepRequest(scope: StepScope, input: StreamStepInput, messages: ModelMessage[], idle: { signal: AbortSignal; touch(): void }): Promise<ModelStreamRequest> {
  const { config } = scope
  return {
    model: modelFor(config, input),
    // (the AI SDK sends it with each step of a tool loop too: the model knows the answer's shape from the start)
    ...(config.output ? { responseFormat: await config.output.responseFormat } : {}),
    system: config.system,
    messages,
    tools: config.tools,
    settings: config.call,
    abortSignal: idle.signal,
    onChunk: idle.touch,
    promptCache: scope.messages.promptCache,
    onHookError: (error: unknown) => config.onHookError?.(new HookError("a tool's input hook", error)),
  }
}

/** The model call's span (telemetry), its input read only when recorded. */
function modelCallSpan(scope: StepScope, input: StreamStepInput, messages: ModelMessage[]) {
  const { config } = scope
  const model = modelFor(config, input)
  return config.telemetry.modelCall({
    turnId: scope.turnId,
    sessionId: scope.sessionId,
    provider: model.provider,
    model: model.modelId,
    step: input.step,
    attempt: input.attempt,
    input: () => (config.system === undefined ? messages : [{ role: 'system', content: config.system }, ...messages]),
  })
}

/** How the model call's span ends: its error, or its finish, usage and (when recorded) output. */
function spanEnd(scope: StepScope, state: StepState, exit: StateExit) {
  if (state.failure !== undefined || exit.left) return { error: exit.left ? exit.reason : state.failure }
  const tokens = state.stepTokens
  return {
    finishReason: state.finishReason,
    inputTokens: tokens?.input,
    outputTokens: tokens?.output,
    reasoningTokens: tokens?.reasoning,
    cacheReadTokens: tokens?.cache.read,
    output: scope.config.telemetry.recordOutputs ? state.output() : undefined,
  }
}

/** A finished step: its usage spent, its tool calls handed to the tool runner (approvals and doom loops decided), its overflow judged. */
async function finishedEvent(scope: StepScope, state: StepState, meter: StepMeter | undefined): Promise<TurnEvent> {
  const { config } = scope
  state.closeOpenText()
  if (state.finished) meter?.spend(state.finished)
  scope.messages.stepTools = state.tools
  const tokens = state.stepTokens
  const overflow = config.limits !== undefined && tokens !== undefined && isUsageOverflow(tokens, config.limits, config.compaction.reserved)
  const { approvals, doomLoop } = await reviewToolCalls(scope, state.tools)
  return {
    type: 'step.finished',
    finishReason: state.finishReason,
    toolCalls: state.tools.length,
    overflow,
    ...(approvals.length ? { approvals } : {}),
    ...(doomLoop ? { doomLoop } : {}),
    // A final answer of a turn with structured output: the step gate parses and checks it.
    ...(config.output && state.tools.length === 0 ? { checksOutput: true } : {}),
  }
}

/**
 * Before the step's tools run: which calls need approval (the tool's `needsApproval`, or a
 * doom loop under policy `ask`), and whether the turn's calls loop (policy `stop`).
 */
async function reviewToolCalls(scope: StepScope, stepTools: ToolPart[]): Promise<{ approvals: string[]; doomLoop: SerializedError | null }> {
  const runnable = stepTools.filter((p) => p.state.status === 'running')
  if (runnable.length === 0) return { approvals: [], doomLoop: null }
  const loop = detectDoomLoop(recentCalls(scope.messages.assistantMessages(), doomLoopWindow(scope.config.doomLoop)), scope.config.doomLoop)
  if (loop && scope.config.doomLoop.policy === 'stop') return { approvals: [], doomLoop: new DoomLoopError(loop).toJSON() }
  const looping = new Set(loop ? loop.calls.map((c) => `${c.tool}\u0000${canonicalJson(c.input)}`) : [])
  const approvals: string[] = []
  for (const part of runnable) {
    const definition = Object.hasOwn(scope.config.tools, part.tool) ? scope.config.tools[part.tool] : undefined
    const input = part.state.input
    let needs = looping.has(`${part.tool}\u0000${canonicalJson(input)}`)
    if (!needs && definition?.needsApproval !== undefined) {
      try {
        needs =
          typeof definition.needsApproval === 'function'
            ? Boolean(await definition.needsApproval(input as never, { toolCallId: part.callId, messages: [] }))
            : definition.needsApproval === true
      } catch (error) {
        // A policy that cannot decide asks a human: a broken check never lets a tool run unasked.
        needs = true
        scope.config.onHookError?.(new HookError(`tool '${part.tool}' needsApproval`, error))
      }
    }
    if (needs) {
      const timeoutMs = toolOptions(definition).approvalTimeoutMs ?? scope.config.approvalTimeoutMs
      requireApproval(part, timeoutMs === undefined ? undefined : Date.now() + timeoutMs)
      scope.writer.changed(part)
      approvals.push(part.callId)
    }
  }
  return { approvals, doomLoop: null }
}

/** The turn's last `count` tool calls, oldest first (a call an interruption closed is none), read from the end: a step's check does not grow with the turn. */
function recentCalls(messages: MessageWithParts[], count: number): ToolCallSignature[] {
  const calls: ToolCallSignature[] = []
  for (let m = messages.length - 1; m >= 0 && calls.length < count; m--) {
    const { parts } = messages[m]
    for (let i = parts.length - 1; i >= 0 && calls.length < count; i--) {
      const part = parts[i]
      if (part.type === 'tool' && !(part.state.status === 'error' && part.state.metadata?.interrupted)) calls.push({ tool: part.tool, input: part.state.input })
    }
  }
  return calls.reverse()
}

/**
 * A failed attempt's event: the failure protocol's decision (the retry policy counts the attempts
 * on the model asked), or a fallback to the turn's next model; `providers`: the failure was the
 * provider's (what a circuit counts); `retryAt`: it said when to come back.
 */
function failedEvent(scope: StepScope, input: StreamStepInput, error: unknown): { event: TurnEvent; providers: boolean; retryAt?: number } {
  const { failure, models } = scope.config
  const decision = decideFailure(error, { attempt: attemptOnModel(input), waitedMs: input.waitedMs }, failure)
  const fallback = fallbackAfter(models, input, decision, failure.attemptsPerModel)
  const event: TurnEvent = {
    type: 'step.failed',
    error: decision.error,
    overflow: decision.kind === 'overflow',
    retryDelayMs: fallback ? 0 : decision.kind === 'retry' ? decision.delayMs : null,
    ...(fallback ? { fallback } : {}),
  }
  const providers = isProvidersFailure(decision)
  const retryAt = decision.kind === 'overflow' ? undefined : decision.retryAt
  return { event, providers, ...(retryAt !== undefined ? { retryAt } : {}) }
}

/** One attempt of a step as its events arrive: the parts it opened (by the stream's ids), its finish or its failure. */
class StepState {
  private open = new Map<string, TextPart>()
  private last: { type: 'text' | 'reasoning'; id: string; key: string; part: TextPart } | undefined
  private toolsById = new Map<string, ToolPart>()
  readonly tools: ToolPart[] = []
  /** Why the attempt failed (an error event, an abort, a throw), once it did. */
  failure: unknown
  finishReason = 'unknown'
  stepTokens: Tokens | undefined
  /** What the finished step used. */
  finished: { tokens: Tokens; cost: number } | undefined

  constructor(
    private readonly scope: StepScope,
    private readonly message: MessageWithParts,
    private readonly input: StreamStepInput,
  ) {}

  /** A turn with fallback models: the name of the model the attempt asks, on its step-start part. */
  #asked(): { model?: string } {
    const asked = modelAsked(this.scope.config, this.input)
    return asked ? { model: asked.name } : {}
  }

  /** One event of the model call; false once the attempt failed (the call stops). */
  hear(event: ModelStreamEvent, idle: AbortSignal): boolean {
    switch (event.type) {
      case 'start':
        // The provider's warnings stay on the step (and are published with its part).
        this.add({ type: 'step-start', time: { start: Date.now() }, ...this.#asked(), ...(event.warnings ? { warnings: event.warnings } : {}) })
        break
      case 'text-start':
      case 'reasoning-start':
        this.openText(event.type === 'text-start' ? 'text' : 'reasoning', event.id, event.providerMetadata)
        break
      case 'text-delta':
      case 'reasoning-delta':
        this.appendText(event.type === 'text-delta' ? 'text' : 'reasoning', event.id, event.delta, event.providerMetadata)
        break
      case 'text-end':
      case 'reasoning-end':
        this.closeText(event.type === 'text-end' ? 'text' : 'reasoning', event.id, event.providerMetadata)
        break
      case 'tool-input-start':
        this.toolPending(event.id, event.toolName)
        break
      case 'tool-call':
        if (event.error !== undefined) this.toolError(event.callId, event.toolName, event.input, event.error, event.providerMetadata)
        else this.toolRunning(event.callId, event.toolName, event.input, event.providerMetadata)
        break
      case 'file':
      case 'source': {
        const { type, ...fields } = event
        this.add({ type, ...fields } as DistributiveOmit<Part, 'id' | 'sessionId' | 'messageId' | 'step' | 'attempt'>)
        break
      }
      case 'finish':
        this.finish(event.finishReason, event.usage)
        break
      case 'error':
        this.failure = event.error
        break
      case 'abort':
        this.failure = idle.reason
        break
    }
    return this.failure === undefined
  }

  /** The step's finish: its part, and its usage and cost added to the answer's. */
  private finish(reason: string, usage: LanguageModelUsage): void {
    const tokens = toTokens(usage)
    const cost = stepCost(tokens, this.scope.config.pricing)
    this.finishReason = reason
    this.stepTokens = tokens
    this.add({ type: 'step-finish', reason, tokens, cost, time: { start: Date.now() } })
    this.finished = { tokens, cost }
    const info = this.message.info
    info.tokens = addTokens(info.tokens ?? toTokens(undefined), tokens)
    info.cost = (info.cost ?? 0) + cost
    info.finish = reason
    this.scope.messages.saveMessage(info)
  }

  add(fields: DistributiveOmit<Part, 'id' | 'sessionId' | 'messageId' | 'step' | 'attempt'>): Part {
    // (`Object.assign` onto a copy, not a spread with more keys in one literal: V8 gives such a
    // literal of the parts' several shapes new maps each time, ~1.8 KB a part instead of ~0.2)
    const part = Object.assign({}, fields) as Part
    part.id = newId('prt')
    part.sessionId = this.scope.sessionId
    part.messageId = this.message.info.id
    part.step = this.input.step
    part.attempt = this.input.attempt
    // (straight to the writer: a step's part goes from the stream to its row through no other module)
    this.scope.writer.add(part, this.scope.messages.placePart(this.message, part))
    return part
  }

  openText(type: 'text' | 'reasoning', id: string, metadata?: PartProviderMetadata): void {
    const fields = { type, text: '', time: { start: Date.now() }, ...(metadata ? { providerMetadata: metadata } : {}) }
    this.open.set(openKey(type, id), this.add(fields) as TextPart)
  }

  appendText(type: 'text' | 'reasoning', id: string, delta: string, metadata?: PartProviderMetadata): void {
    // The deltas of one part come in a row: its lookup is kept (no key string built per delta).
    const last = this.last
    const part = last && last.type === type && last.id === id && this.open.get(last.key) === last.part ? last.part : this.lookUp(type, id)
    if (!part) return // a delta for an id never started is ignored
    if (delta.length > 0) this.scope.writer.append(part, delta)
    // Rare (a signature at the end of a thinking block): one more change to flush, not a write per token.
    if (metadata && mergeMetadata(part, metadata)) this.scope.writer.changed(part)
  }

  /** The open part of a stream id, remembered for the next delta. */
  private lookUp(type: 'text' | 'reasoning', id: string): TextPart | undefined {
    const key = openKey(type, id)
    const part = this.open.get(key)
    this.last = part ? { type, id, key, part } : undefined
    return part
  }

  closeText(type: 'text' | 'reasoning', id: string, metadata?: PartProviderMetadata): void {
    const key = openKey(type, id)
    if (metadata) {
      const part = this.open.get(key)
      if (part) mergeMetadata(part, metadata)
    }
    this.closeKey(key)
  }

  /** What the model answered in this attempt (for telemetry's recorded outputs). */
  output(): Array<{ type: string; text?: string; tool?: string; input?: unknown }> {
    const out: Array<{ type: string; text?: string; tool?: string; input?: unknown }> = []
    for (const p of this.message.parts) {
      if (p.step !== this.input.step || p.attempt !== this.input.attempt) continue
      if (p.type === 'text' || p.type === 'reasoning') out.push({ type: p.type, text: p.text })
      else if (p.type === 'tool') out.push({ type: 'tool-call', tool: p.tool, input: p.state.input })
    }
    return out
  }

  closeOpenText(): void {
    for (const key of [...this.open.keys()]) this.closeKey(key)
  }

  private closeKey(key: string): void {
    const part = this.open.get(key)
    if (!part) return
    this.open.delete(key)
    part.time.end = Date.now()
    this.scope.writer.changed(part)
  }

  toolPending(callId: string, toolName: string): ToolPart {
    let part = this.toolsById.get(callId)
    if (!part) {
      part = this.add({ type: 'tool', callId, tool: toolName, state: { status: 'pending', input: {} } }) as ToolPart
      this.toolsById.set(callId, part)
      this.tools.push(part)
    }
    return part
  }

  toolRunning(callId: string, toolName: string, input: unknown, metadata?: PartProviderMetadata): void {
    const part = this.toolPending(callId, toolName)
    if (part.state.status !== 'pending') return
    if (metadata) mergeMetadata(part, metadata)
    runCall(part, input, Date.now())
    this.scope.writer.changed(part)
  }

  toolError(callId: string, toolName: string, input: unknown, error: string, metadata?: PartProviderMetadata): void {
    const part = this.toolPending(callId, toolName)
    if (part.state.status === 'error') return
    if (metadata) mergeMetadata(part, metadata)
    failCall(part, error, Date.now(), input)
    this.scope.writer.changed(part)
  }

  /** The attempt failed: its calls never run. */
  discardTools(): void {
    for (const part of this.tools) if (stopCall(part, { kind: 'attempt-failed' }, Date.now())) this.scope.writer.changed(part)
  }
}

/** The key of an open text or reasoning part: the stream's id is any string, so it is never split again. */
const openKey = (type: 'text' | 'reasoning', id: string) => `${type}\u0000${id}`

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/**
 * Merges a provider's metadata into the part's, per provider name (later fields win, as the
 * AI SDK keeps the latest): a signature that arrives after the thinking text joins what the
 * block's start said. Returns whether anything changed.
 */
function mergeMetadata(part: TextPart | ToolPart, metadata: PartProviderMetadata): boolean {
  let changed = false
  const merged: PartProviderMetadata = { ...part.providerMetadata }
  for (const [provider, fields] of Object.entries(metadata)) {
    if (typeof fields !== 'object' || fields === null) continue
    merged[provider] = { ...merged[provider], ...fields }
    changed = true
  }
  if (changed) part.providerMetadata = merged
  return changed
}
