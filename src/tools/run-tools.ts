/**
 * Runs the tool calls of a finished step with the user's `execute`: at most
 * `toolExecution.concurrency` at once, each with its own AbortSignal and timeout. Results and
 * errors become tool parts; the next step sends them to the model in call order.
 */
import type { ModelMessage, ToolSet } from 'ai'
import type { Part, ToolPart, ToolState } from '../core/types'
import type { Telemetry } from '../telemetry/telemetry'
import type { Redactor } from '../core/secrets/redact-secrets'
import { callTimeoutMs, toolOptions, type ReconcileResult, type ToolOptions } from './tool-options'
import { completeCall, deferCall, doubtCall, executionOf, failCall, markReconciled, matchesApproval, rerunCall } from './tool-part'
import { CallOutcomeUnknownError, safeMessage } from '../core/errors'
import { untilLeft } from '../core/until-aborted'
import { StateExit } from '../core/state-exit'
import { toolChange, toolChangedMessage, type ToolFingerprint } from './tool-fingerprint'
import { isMcpTool, throwIfMcpError } from './mcp-result'
import { idempotencyKeyOf, type CallInfo, type CallPorts } from './call-info'
import { deadlineOf, isDeferral } from './defer'
import { callWait } from '../core/call-wait'

export type { TurnToolContext } from './call-info'

/** What running a step's tools needs from the turn: its calls, the history, the settings, a part sink. */
export interface ToolRunScope {
  readonly turnId: string
  readonly sessionId: string
  readonly messages: {
    /** The tool parts of the step that streamed last; the `running` ones are run. */
    readonly stepTools: ToolPart[]
    /** The history the tools are given (`messages` of the AI SDK's tool options). */
    modelMessages(): ModelMessage[]
  }
  readonly config: { tools: ToolSet; pinnedTools?: { pinned: ToolFingerprint; current: ToolFingerprint }; toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number }; telemetry: Pick<Telemetry, 'toolCall'>; redactor: Pick<Redactor, 'text'> }
  /** Told of each part whose state changed. */
  readonly writer: { changed(part: Part): void }
}

/**
 * Runs every `running` tool part of the last step, and asks the `reconcile` hook of each call
 * in doubt not asked yet. Resolves when all have settled; a tool that throws becomes an `error`
 * part, one that throws `CallOutcomeUnknownError` an `in-doubt` part (its `reconcile` asked
 * first), one that returns `defer()` a `deferred` part. Only a defect rejects (the turn's gated
 * actor makes it the turn's failure). Resolves with the calls of the step that still wait
 * (`waitingCallsOf`).
 *
 * `ports`: what the engine lends the calls, put in each call's context: the runner an
 * `agentTool` starts its child turn through (run trees), the schedules `scheduleTool` stores in.
 *
 * @example
 * const waiting = await runTools(scope, exit)
 */
export async function runTools(scope: ToolRunScope, exit: StateExit, ports: CallPorts = {}): Promise<WaitingCalls> {
  const calls = scope.messages.stepTools.filter((part) => part.state.status === 'running' || (part.state.status === 'in-doubt' && !part.state.reconciled && reconcileOf(scope, part) !== undefined))
  if (calls.length > 0) {
    const messages = scope.messages.modelMessages()
    let next = 0
    const worker = async () => {
      while (next < calls.length && !exit.left) {
        const part = calls[next++]
        await runOne(scope, part, messages, exit, ports)
      }
    }
    const workers = Array.from({ length: Math.min(scope.config.toolExecution.concurrency, calls.length) }, worker)
    await Promise.all(workers)
  }
  return waitingCallsOf(scope.messages.stepTools)
}

/** The calls of a step that wait for `resolveCall`: in doubt, deferred, and the earliest deadline among them. */
export interface WaitingCalls {
  inDoubt: string[]
  deferred: string[]
  /** Those of `deferred` that settle themselves at their deadline (`sleep()`, `defer({ onDeadline })`). */
  sleeping: string[]
  deadline: number | null
}

/**
 * The calls among `parts` that wait, and the earliest stored deadline of those (what the turn
 * row's `retry_at` holds in a waiting state, so that whichever engine sweeps finds it).
 *
 * @example
 * waitingCallsOf(scope.messages.stepTools) // { inDoubt: ['call_1'], deferred: [], sleeping: [], deadline: null }
 */
export function waitingCallsOf(parts: readonly ToolPart[]): WaitingCalls {
  const inDoubt: string[] = []
  const deferred: string[] = []
  const sleeping: string[] = []
  let deadline: number | null = null
  for (const part of parts) {
    const wait = callWait(part.state)
    if (wait?.kind === 'in-doubt') inDoubt.push(part.callId)
    else if (wait?.kind === 'deferred' || wait?.kind === 'sleep') {
      deferred.push(part.callId)
      if (wait.kind === 'sleep') sleeping.push(part.callId)
      if (wait.deadline !== undefined) deadline = Math.min(deadline ?? Infinity, wait.deadline)
    }
  }
  return { inDoubt, deferred, sleeping, deadline }
}

function definitionOf(scope: ToolRunScope, part: ToolPart): ToolSet[string] | undefined {
  // Own properties only: `constructor`, `__proto__` or `toString` is an unknown tool, not Object's.
  return Object.hasOwn(scope.config.tools, part.tool) ? scope.config.tools[part.tool] : undefined
}

function reconcileOf(scope: ToolRunScope, part: ToolPart): ToolOptions['reconcile'] {
  return toolOptions(definitionOf(scope, part)).reconcile
}

/**
 * What one execution of a call gets as its context: the turn, the call, its key and its
 * execution. The key is a SHA-256, made when first read (most tools never read it).
 */
function callContext(scope: ToolRunScope, part: ToolPart, ports: CallPorts): CallInfo {
  let key: string | undefined
  const idempotencyKey = () => (key ??= idempotencyKeyOf(scope.turnId, part.id))
  const { childTurns, schedule } = ports
  return {
    sessionId: scope.sessionId,
    turnId: scope.turnId,
    callId: part.callId,
    get idempotencyKey() {
      return idempotencyKey()
    },
    attempt: executionOf(part),
    ...(childTurns ? { childTurns } : {}),
    // (the call's key is the schedule's id: the call run again stores the same one)
    ...(schedule ? { schedule: (request) => schedule({ ...request, sessionId: scope.sessionId, id: `sch_${idempotencyKey().slice(4)}` }) } : {}),
  }
}

/** The options a tool's `execute` gets: the AI SDK's (its `abortSignal` made when read), and the call's context as fields (its key read through, when read) and as `experimental_context`. */
function executeOptions(context: CallInfo, messages: ModelMessage[], callExit: StateExit) {
  return {
    toolCallId: context.callId,
    messages,
    get abortSignal() {
      return callExit.signal
    },
    sessionId: context.sessionId,
    turnId: context.turnId,
    callId: context.callId,
    get idempotencyKey() {
      return context.idempotencyKey
    },
    attempt: context.attempt,
    ...(context.childTurns ? { childTurns: context.childTurns } : {}),
    experimental_context: context,
  }
}

/**
 * One call: a call in doubt is reconciled first (and runs again when its hook says it did not
 * happen); a running call executes, and if its outcome turns out unknown its hook is asked once.
 */
async function runOne(scope: ToolRunScope, part: ToolPart, messages: ModelMessage[], exit: StateExit, ports: CallPorts): Promise<void> {
  let mayReconcile = true
  if (part.state.status === 'in-doubt') {
    await reconcileCall(scope, part, exit, ports)
    mayReconcile = false
  }
  if (part.state.status === 'running') {
    await executeCall(scope, part, messages, exit, ports)
    if (mayReconcile && !exit.left && (part.state as ToolState).status === 'in-doubt' && reconcileOf(scope, part)) {
      await reconcileCall(scope, part, exit, ports)
      if ((part.state as ToolState).status === 'running') await executeCall(scope, part, messages, exit, ports)
    }
  }
  if (!exit.left) scope.writer.changed(part)
}

/**
 * Asks the tool's `reconcile` whether the effect of a call in doubt happened: done (its result
 * completes the call), not done (the call runs again, same key), or cannot tell (a throw or a
 * timeout too: the call stays in doubt, not asked again for this execution).
 */
async function reconcileCall(scope: ToolRunScope, part: ToolPart, exit: StateExit, ports: CallPorts): Promise<void> {
  const hook = reconcileOf(scope, part)
  if (!hook || part.state.status !== 'in-doubt') return
  const definition = definitionOf(scope, part)
  const timeoutMs = callTimeoutMs(definition, scope.config.toolExecution.timeoutMs)
  let timer: NodeJS.Timeout | undefined
  let stopListening = () => {}
  const giveUp = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs)
    stopListening = exit.onLeave(() => resolve(undefined))
  })
  let verdict: ReconcileResult
  try {
    verdict = await Promise.race([Promise.resolve(hook(part.state.input, callContext(scope, part, ports))), giveUp])
  } catch {
    verdict = undefined
  } finally {
    clearTimeout(timer)
    stopListening()
  }
  if (exit.left) return
  const now = Date.now()
  if (verdict && verdict.done === true) {
    const { input } = part.state
    try {
      const modelOutput = definition?.toModelOutput ? await modelOutputOf(definition.toModelOutput, { toolCallId: part.callId, input, output: verdict.output }) : undefined
      completeCall(part, boundedOutput(verdict.output, scope.config.toolExecution.maxOutputBytes), now, modelOutput)
    } catch (error) {
      failCall(part, errorMessage(error, scope.config.redactor.text), now)
    }
  } else if (verdict && verdict.done === false) rerunCall(part, now)
  else markReconciled(part)
}

async function executeCall(scope: ToolRunScope, part: ToolPart, messages: ModelMessage[], exit: StateExit, ports: CallPorts): Promise<void> {
  if (part.state.status !== 'running') return
  const { input } = part.state
  const definition = definitionOf(scope, part)
  const timeoutMs = callTimeoutMs(definition, scope.config.toolExecution.timeoutMs)
  // The call's own exit: the state's, or its timeout. Its AbortSignal is made only for a tool
  // that reads `abortSignal`; one that ignores it is not waited for past either (untilLeft below).
  const callExit = new StateExit()
  const stopListening = exit.onLeave((reason) => callExit.leave(reason))
  const timer = setTimeout(() => callExit.leave(new Error(`tool '${part.tool}' timed out after ${timeoutMs} ms`)), timeoutMs)
  const span = scope.config.telemetry.toolCall({ turnId: scope.turnId, sessionId: scope.sessionId, tool: part.tool, callId: part.callId, input })
  try {
    // A tool the turn was started with that is gone or changed (a deploy, an MCP server's new tools): not run, named.
    const pinned = scope.config.pinnedTools
    const change = pinned && toolChange(pinned.pinned, pinned.current, part.tool)
    if (change) throw new Error(toolChangedMessage(part.tool, change))
    if (!definition?.execute) throw new Error(`unknown tool '${part.tool}'`)
    // An approved call runs only with the input its receipt's digest names (what the approver saw).
    if (!matchesApproval(part, input)) throw new Error(`not run: the input differs from the approved one (its SHA-256 is not the receipt's ${part.receipt?.inputDigest})`)
    const run = Promise.resolve(definition.execute(input as never, executeOptions(callContext(scope, part, ports), messages, callExit) as never)).then(lastValue)
    const output = await untilLeft(run, callExit)
    if (exit.left) return // the turn's end marks the part aborted
    if (isDeferral(output)) return deferCall(part, deadlineOf(output, Date.now()), output.onDeadline && { output: boundedOutput(output.onDeadline.output, scope.config.toolExecution.maxOutputBytes) })
    if (isMcpTool(definition)) throwIfMcpError(part.tool, output) // an MCP result with isError is the call's failure
    const modelOutput = definition.toModelOutput ? await modelOutputOf(definition.toModelOutput, { toolCallId: part.callId, input, output }) : undefined
    completeCall(part, boundedOutput(output, scope.config.toolExecution.maxOutputBytes), Date.now(), modelOutput)
  } catch (error) {
    if (exit.left) return
    // The tool says its effect may have happened: not an error the model sees, a call in doubt.
    if (CallOutcomeUnknownError.isInstance(error)) doubtCall(part, scope.config.redactor.text(error.message))
    else failCall(part, errorMessage(error, scope.config.redactor.text), Date.now())
  } finally {
    clearTimeout(timer)
    stopListening()
    const state = part.state as ToolState // changed by completeCall / failCall above
    span?.end(
      exit.left
        ? { error: 'the turn was aborted while the tool ran' }
        : state.status === 'completed'
          ? { output: state.output }
          : { error: state.status === 'error' ? state.error : state.status === 'deferred' ? 'deferred' : state.status === 'in-doubt' ? `outcome unknown: ${state.reason}` : 'the tool did not finish' },
    )
  }
}

/**
 * The tool's `toModelOutput` (the AI SDK's option): what the model is sent of the result, made
 * once from the raw output and stored on the part beside it. A throw, or something that is not
 * a tool result output (`{ type: 'text' | 'json' | 'content' | …, value }`), fails the call.
 */
async function modelOutputOf(toModelOutput: (options: { toolCallId: string; input: never; output: never }) => unknown, options: { toolCallId: string; input: unknown; output: unknown }): Promise<unknown> {
  let made: unknown
  try {
    made = await toModelOutput(options as never)
  } catch (error) {
    throw new Error(`the tool's toModelOutput failed: ${error instanceof Error ? error.message : String(error)}`)
  }
  const type = (made as { type?: unknown } | null)?.type
  if (typeof type !== 'string') throw new Error(`the tool's toModelOutput returned ${JSON.stringify(made) ?? String(made)}, not a tool result output ({ type: 'text', value } or { type: 'json', value })`)
  return JSON.parse(JSON.stringify(made)) as unknown // stored as JSON, as the part is
}

/** A tool may return an async iterable of preliminary outputs; the last one is the result. */
async function lastValue(value: unknown): Promise<unknown> {
  if (value && typeof value === 'object' && Symbol.asyncIterator in value) {
    let last: unknown
    for await (const item of value as AsyncIterable<unknown>) last = item
    return last
  }
  return value
}

/**
 * Outputs are stored as JSON: undefined becomes null; what JSON cannot hold (a cycle, a
 * BigInt) becomes its string form; an output over `maxBytes` is cut, saying so, so one tool
 * cannot fill the context or the database.
 */
function boundedOutput(value: unknown, maxBytes: number): unknown {
  if (value === undefined) return null
  // A string whose JSON fits even if every byte were escaped (six bytes at most, and its quotes) is kept without making that JSON.
  if (typeof value === 'string' && Buffer.byteLength(value) * 6 + 2 <= maxBytes) return value
  let json: string
  try {
    json = JSON.stringify(value) ?? 'null'
  } catch {
    return truncate(`[output not JSON-serialisable: ${safeMessage(value)}]`, maxBytes)
  }
  // (a string is its own JSON copy: not parsed back, which would copy it)
  if (Buffer.byteLength(json) <= maxBytes) return typeof value === 'string' ? value : JSON.parse(json)
  return truncate(typeof value === 'string' ? value : json, maxBytes)
}

function truncate(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text)
  if (bytes <= maxBytes) return text
  const note = `\n[output truncated: ${bytes} bytes, limit ${maxBytes}]`
  const kept = Buffer.from(text).subarray(0, Math.max(0, maxBytes - Buffer.byteLength(note))).toString('utf8').replace(/\uFFFD$/, '')
  return kept + note
}

/**
 * The stored message of whatever a tool threw. Never throws: a Proxy, a revoked Proxy or an
 * Error whose `message` getter throws still becomes a message, and the turn goes on.
 */
function errorMessage(error: unknown, redact: (text: string) => string): string {
  let isError = false
  try {
    isError = error instanceof Error
  } catch {
    // a revoked Proxy throws on its prototype lookup
  }
  const message = safeMessage(error)
  return redact(isError || typeof error === 'string' ? message : `tool threw a non-Error value: ${message}`)
}
