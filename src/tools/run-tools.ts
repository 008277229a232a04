/**
 * Runs the tool calls of a finished step with the user's `execute`: at most
 * `toolExecution.concurrency` at once, each with its own AbortSignal and timeout. Results and
 * errors become tool parts; the next step sends them to the model in call order.
 */
import type { ModelMessage, ToolSet } from 'ai'
import type { Part, ToolPart, ToolState } from '../core/types'
import type { Telemetry } from '../telemetry/telemetry'
import type { Redactor } from '../core/secrets/redact-secrets'
import type { ChildTurnRunner } from './child-turns'
import { toolOptions } from './tool-options'
import { completeCall, failCall, matchesApproval } from './tool-part'
import { safeMessage } from '../core/errors'
import { toolChange, toolChangedMessage, type ToolFingerprint } from './tool-fingerprint'
import { isMcpTool, throwIfMcpError } from './mcp-result'

/** What running a step's tools needs from the turn: its calls, the history, the settings, a part sink. */
export interface ToolRunScope {
  readonly turnId: string
  readonly sessionId: string
  /** The tool parts of the step that streamed last; the `running` ones are run. */
  readonly stepTools: ToolPart[]
  /** The history the tools are given (`messages` of the AI SDK's tool options). */
  modelMessages(): ModelMessage[]
  readonly config: { tools: ToolSet; pinnedTools?: { pinned: ToolFingerprint; current: ToolFingerprint }; toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number }; telemetry: Pick<Telemetry, 'toolCall'>; redactor: Pick<Redactor, 'text'> }
  /** Told of each part whose state changed. */
  readonly writer: { changed(part: Part): void }
}

/**
 * Runs every `running` tool part of the last step. Resolves when all have settled; a tool
 * that throws becomes an `error` part. Only a defect rejects (the turn's gated actor makes it
 * the turn's failure).
 *
 * `children`: the runner an `agentTool` starts its child turn through (run trees), put in each
 * call's context.
 *
 * @example
 * await runTools(scope, signal)
 */
export async function runTools(scope: ToolRunScope, signal: AbortSignal, children?: ChildTurnRunner): Promise<void> {
  const calls = scope.stepTools.filter((part) => part.state.status === 'running')
  if (calls.length === 0) return
  const messages = scope.modelMessages()
  let next = 0
  const worker = async () => {
    while (next < calls.length && !signal.aborted) {
      const part = calls[next++]
      await runOne(scope, part, messages, signal, children)
    }
  }
  const workers = Array.from({ length: Math.min(scope.config.toolExecution.concurrency, calls.length) }, worker)
  await Promise.all(workers)
}

/**
 * What a tool's `execute` gets besides the AI SDK's options (as `options.experimental_context`):
 * the session and turn it runs for, and the runner of child turns when the engine runs them.
 */
export interface TurnToolContext {
  sessionId: string
  turnId: string
  /** Run trees: starts a child turn of this call (what `agentTool` runs on); absent when the engine runs none. */
  childTurns?: ChildTurnRunner
}

function toolContext(scope: ToolRunScope, children: ChildTurnRunner | undefined): TurnToolContext & { experimental_context: TurnToolContext } {
  const context: TurnToolContext = { sessionId: scope.sessionId, turnId: scope.turnId, ...(children ? { childTurns: children } : {}) }
  return { ...context, experimental_context: context }
}

/**
 * The session and turn a tool call runs for, read from the options `execute` receives.
 *
 * @example
 * execute: async (input, options) => { const { sessionId, turnId } = turnOfTool(options); ... }
 */
export function turnOfTool(options: unknown): TurnToolContext {
  const context = (options as { experimental_context?: Partial<TurnToolContext> } | undefined)?.experimental_context
  return { sessionId: String(context?.sessionId ?? ''), turnId: String(context?.turnId ?? '') }
}

async function runOne(scope: ToolRunScope, part: ToolPart, messages: ModelMessage[], turnSignal: AbortSignal, children: ChildTurnRunner | undefined): Promise<void> {
  if (part.state.status !== 'running') return
  const { input } = part.state
  // Own properties only: `constructor`, `__proto__` or `toString` is an unknown tool, not Object's.
  const definition = Object.hasOwn(scope.config.tools, part.tool) ? scope.config.tools[part.tool] : undefined
  const timeoutMs = toolOptions(definition).timeoutMs ?? scope.config.toolExecution.timeoutMs
  const controller = new AbortController()
  const onTurnAbort = () => controller.abort(turnSignal.reason)
  turnSignal.addEventListener('abort', onTurnAbort, { once: true })
  let timer: NodeJS.Timeout | undefined
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`tool '${part.tool}' timed out after ${timeoutMs} ms`)
      controller.abort(error)
      reject(error)
    }, timeoutMs)
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
  })
  stopped.catch(() => undefined)
  const span = scope.config.telemetry.toolCall({ turnId: scope.turnId, sessionId: scope.sessionId, tool: part.tool, callId: part.callId, input })
  try {
    // A tool the turn was started with that is gone or changed (a deploy, an MCP server's new tools): not run, named.
    const pinned = scope.config.pinnedTools
    const change = pinned && toolChange(pinned.pinned, pinned.current, part.tool)
    if (change) throw new Error(toolChangedMessage(part.tool, change))
    if (!definition?.execute) throw new Error(`unknown tool '${part.tool}'`)
    // An approved call runs only with the input its receipt's digest names (what the approver saw).
    if (!matchesApproval(part, input)) throw new Error(`not run: the input differs from the approved one (its SHA-256 is not the receipt's ${part.receipt?.inputDigest})`)
    const run = Promise.resolve(
      definition.execute(input as never, {
        toolCallId: part.callId,
        messages,
        abortSignal: controller.signal,
        // Which session and turn the call runs for: as fields, and as the AI SDK's context.
        ...toolContext(scope, children),
      } as never),
    ).then(lastValue)
    const output = await Promise.race([run, stopped])
    if (turnSignal.aborted) return // the turn's end marks the part aborted
    if (isMcpTool(definition)) throwIfMcpError(part.tool, output) // an MCP result with isError is the call's failure
    const modelOutput = definition.toModelOutput ? await modelOutputOf(definition.toModelOutput, { toolCallId: part.callId, input, output }) : undefined
    completeCall(part, boundedOutput(output, scope.config.toolExecution.maxOutputBytes), Date.now(), modelOutput)
  } catch (error) {
    if (turnSignal.aborted) return
    failCall(part, errorMessage(error, scope.config.redactor.text), Date.now())
  } finally {
    if (timer) clearTimeout(timer)
    turnSignal.removeEventListener('abort', onTurnAbort)
    const state = part.state as ToolState // changed by completeCall / failCall above
    span?.end(
      turnSignal.aborted
        ? { error: 'the turn was aborted while the tool ran' }
        : state.status === 'completed'
          ? { output: state.output }
          : { error: state.status === 'error' ? state.error : 'the tool did not finish' },
    )
  }
  scope.writer.changed(part)
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
  let json: string
  try {
    json = JSON.stringify(value) ?? 'null'
  } catch {
    return truncate(`[output not JSON-serialisable: ${safeMessage(value)}]`, maxBytes)
  }
  if (Buffer.byteLength(json) <= maxBytes) return JSON.parse(json)
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
