/**
 * One step: one LLM call. Streams the model through `modelStream` (the model's `doStream`
 * directly for a V3 model, `streamText` otherwise; no SDK retries, tools without `execute`, so
 * retries and tool runs are the chart's), maps its events to parts in the database through the
 * part writer, and resolves with the event the chart decides on: `step.finished` or
 * `step.failed`. It never rejects.
 */
import type { StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { DoomLoopError, StreamIdleTimeoutError, serializeError, type SerializedError } from '../errors'
import { canonicalJson, detectDoomLoop } from '../policy/doom-loop'
import { newId } from '../ids'
import { decideFailure } from '../policy/decide-failure'
import { isUsageOverflow } from '../policy/overflow'
import type { TurnScope } from '../turn/turn-scope'
import type { MessageWithParts, Part, TextPart, Tokens, ToolPart } from '../types'
import { startIdleTimer } from './idle-timer'
import { modelStream } from './model-stream'
import { addTokens, stepCost, toTokens } from './usage'

/**
 * Runs one step and reports its outcome as a chart event.
 *
 * @example
 * const event = await streamStep(scope, { turnId, step: 1, attempt: 1, waitedMs: 0 }, signal)
 */
export async function streamStep(scope: TurnScope, input: StreamStepInput, signal: AbortSignal): Promise<TurnEvent> {
  const { config } = scope
  const message = scope.assistantMessage()
  const state = new StepState(scope, message, input)
  const idle = startIdleTimer(signal, config.streamIdleTimeoutMs)

  let failure: unknown
  let finishReason = 'unknown'
  let stepTokens: Tokens | undefined
  try {
    const events = modelStream({
      model: config.model,
      system: config.system,
      messages: scope.modelMessages(),
      tools: config.tools,
      abortSignal: idle.signal,
      onChunk: idle.touch,
    })
    for await (const part of events) {
      switch (part.type) {
        case 'start':
          state.add({ type: 'step-start', time: { start: Date.now() } })
          break
        case 'text-start':
        case 'reasoning-start':
          state.openText(part.type === 'text-start' ? 'text' : 'reasoning', part.id)
          break
        case 'text-delta':
        case 'reasoning-delta':
          state.appendText(part.type === 'text-delta' ? 'text' : 'reasoning', part.id, part.text)
          break
        case 'text-end':
        case 'reasoning-end':
          state.closeText(part.type === 'text-end' ? 'text' : 'reasoning', part.id)
          break
        case 'tool-input-start':
          state.toolPending(part.id, part.toolName)
          break
        case 'tool-call':
          if (part.error !== undefined) state.toolError(part.callId, part.toolName, part.input, part.error)
          else state.toolRunning(part.callId, part.toolName, part.input)
          break
        case 'finish': {
          finishReason = part.finishReason
          stepTokens = toTokens(part.usage)
          const cost = stepCost(stepTokens, config.pricing)
          state.add({ type: 'step-finish', reason: part.finishReason, tokens: stepTokens, cost, time: { start: Date.now() } })
          const info = message.info
          info.tokens = addTokens(info.tokens ?? toTokens(undefined), stepTokens)
          info.cost = (info.cost ?? 0) + cost
          info.finish = part.finishReason
          scope.saveMessage(info)
          break
        }
        case 'error':
          failure = part.error
          break
        case 'abort':
          failure = idle.signal.reason
          break
      }
      if (failure !== undefined) break
    }
  } catch (error) {
    failure = error
  } finally {
    idle.stop()
  }

  if (failure === undefined && idle.signal.aborted) failure = idle.signal.reason
  if (failure === undefined && stepTokens === undefined) {
    // The stream ended without finish-step: treat as a broken stream, retryable.
    failure = Object.assign(new Error('the model stream ended without finishing the step (terminated)'), { code: 'ECONNRESET' })
  }
  if (signal.aborted) {
    // The chart left `streaming` (abort or stop): the turn's end closes what is open.
    state.closeOpenText()
    return { type: 'step.failed', error: serializeError(signal.reason), overflow: false, retryDelayMs: null }
  }
  if (failure !== undefined) {
    // A failed attempt: its text stays, closed; its tool calls never run.
    state.closeOpenText()
    state.discardTools('The tool did not run: the model request failed and the step was retried or ended')
    const reason = idle.signal.aborted && StreamIdleTimeoutError.isInstance(idle.signal.reason) ? idle.signal.reason : failure
    return failedEvent(scope, input, reason)
  }

  state.closeOpenText()
  scope.stepTools = state.tools
  const overflow = config.limits !== undefined && stepTokens !== undefined && isUsageOverflow(stepTokens, config.limits, config.compaction.reserved)
  const { approvals, doomLoop } = await reviewToolCalls(scope, state.tools)
  return {
    type: 'step.finished',
    finishReason,
    toolCalls: state.tools.length,
    overflow,
    ...(approvals.length ? { approvals } : {}),
    ...(doomLoop ? { doomLoop } : {}),
  }
}

/**
 * Before the step's tools run: which calls need approval (the tool's `needsApproval`, or a
 * doom loop under policy `ask`), and whether the turn's calls loop (policy `stop`).
 */
async function reviewToolCalls(scope: TurnScope, stepTools: ToolPart[]): Promise<{ approvals: string[]; doomLoop: SerializedError | null }> {
  const runnable = stepTools.filter((p) => p.state.status === 'running')
  if (runnable.length === 0) return { approvals: [], doomLoop: null }
  const history = scope
    .assistantMessages()
    .flatMap((m) => m.parts)
    .filter((p): p is ToolPart => p.type === 'tool' && !(p.state.status === 'error' && p.state.metadata?.interrupted))
    .map((p) => ({ tool: p.tool, input: p.state.input }))
  const loop = detectDoomLoop(history, scope.config.doomLoop)
  if (loop && scope.config.doomLoop.policy === 'stop') return { approvals: [], doomLoop: new DoomLoopError(loop).toJSON() }
  const looping = new Set(loop ? loop.calls.map((c) => `${c.tool}\u0000${canonicalJson(c.input)}`) : [])
  const approvals: string[] = []
  for (const part of runnable) {
    const definition = scope.config.tools[part.tool]
    const input = part.state.input
    let needs = looping.has(`${part.tool}\u0000${canonicalJson(input)}`)
    if (!needs && definition?.needsApproval !== undefined) {
      try {
        needs =
          typeof definition.needsApproval === 'function'
            ? Boolean(await definition.needsApproval(input as never, { toolCallId: part.callId, messages: [] }))
            : definition.needsApproval === true
      } catch {
        needs = true // a policy that cannot decide asks a human
      }
    }
    if (needs) {
      part.state = { status: 'pending', input, approval: 'required' }
      scope.writer.changed(part)
      approvals.push(part.callId)
    }
  }
  return { approvals, doomLoop: null }
}

function failedEvent(scope: TurnScope, input: StreamStepInput, error: unknown): TurnEvent {
  const decision = decideFailure(error, input, scope.config.failure)
  return {
    type: 'step.failed',
    error: decision.error,
    overflow: decision.kind === 'overflow',
    retryDelayMs: decision.kind === 'retry' ? decision.delayMs : null,
  }
}

/** The parts one attempt of a step opened, by the stream's ids. */
class StepState {
  private open = new Map<string, TextPart>()
  private toolsById = new Map<string, ToolPart>()
  readonly tools: ToolPart[] = []

  constructor(
    private readonly scope: TurnScope,
    private readonly message: MessageWithParts,
    private readonly input: StreamStepInput,
  ) {}

  add(fields: DistributiveOmit<Part, 'id' | 'sessionId' | 'messageId' | 'step' | 'attempt'>): Part {
    const part = {
      ...fields,
      id: newId('prt'),
      sessionId: this.scope.sessionId,
      messageId: this.message.info.id,
      step: this.input.step,
      attempt: this.input.attempt,
    } as Part
    this.scope.addPart(this.message, part)
    return part
  }

  openText(type: 'text' | 'reasoning', id: string): void {
    this.open.set(openKey(type, id), this.add({ type, text: '', time: { start: Date.now() } }) as TextPart)
  }

  appendText(type: 'text' | 'reasoning', id: string, delta: string): void {
    const part = this.open.get(openKey(type, id))
    if (part && delta.length > 0) this.scope.writer.append(part, delta) // a delta for an id never started is ignored
  }

  closeText(type: 'text' | 'reasoning', id: string): void {
    this.closeKey(openKey(type, id))
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

  toolRunning(callId: string, toolName: string, input: unknown): void {
    const part = this.toolPending(callId, toolName)
    if (part.state.status !== 'pending') return
    part.state = { status: 'running', input, time: { start: Date.now() } }
    this.scope.writer.changed(part)
  }

  toolError(callId: string, toolName: string, input: unknown, error: string): void {
    const part = this.toolPending(callId, toolName)
    if (part.state.status === 'error') return
    const now = Date.now()
    const start = part.state.status === 'running' ? part.state.time.start : now
    part.state = { status: 'error', input: input ?? {}, error, time: { start, end: now } }
    this.scope.writer.changed(part)
  }

  discardTools(reason: string): void {
    for (const part of this.tools) {
      if (part.state.status !== 'pending' && part.state.status !== 'running') continue
      const now = Date.now()
      const start = part.state.status === 'running' ? part.state.time.start : now
      part.state = { status: 'error', input: part.state.input, error: reason, metadata: { interrupted: true }, time: { start, end: now } }
      this.scope.writer.changed(part)
    }
  }
}

/** The key of an open text or reasoning part: the stream's id is any string, so it is never split again. */
const openKey = (type: 'text' | 'reasoning', id: string) => `${type}\u0000${id}`

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
