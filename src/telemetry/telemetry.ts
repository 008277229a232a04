/**
 * OpenTelemetry spans of a turn, through `@opentelemetry/api` (an optional peer, loaded
 * lazily): a span per turn, a child span per state visit (from the turn's transitions on the
 * bus), and a child span per model call (GenAI semantic conventions: model, tokens, finish
 * reason) and per tool execution. Without a tracer option the global tracer provider's
 * `turnchart` tracer is used, which is a no-op until the app registers an OpenTelemetry SDK.
 * Inputs and outputs (prompts, completions, tool arguments and results) are recorded only when
 * asked: they may hold personal data.
 */

/** The bus events telemetry reads (the engine's `turn.transition`). */
export interface TransitionEvent {
  type: string
  turnId?: string
  sessionId?: string
  event?: string
  to?: string
}

/** The part of an OpenTelemetry `Span` turnchart uses. */
export interface TelemetrySpan {
  setAttribute(key: string, value: string | number | boolean | string[]): unknown
  setStatus(status: { code: number; message?: string }): unknown
  recordException(exception: Error | string): unknown
  end(): void
}

/** The part of an OpenTelemetry `Tracer` turnchart uses (an OpenTelemetry `Tracer` is one). */
export interface TelemetryTracer {
  startSpan(name: string, options?: { attributes?: Record<string, string | number | boolean>; kind?: number }, context?: unknown): TelemetrySpan
}

export interface TelemetryOptions {
  /** The tracer spans are made with. Default: `trace.getTracer('turnchart')` (a no-op without an OpenTelemetry SDK). */
  tracer?: TelemetryTracer
  /** Record the prompt messages and tool arguments on spans. Default false. */
  recordInputs?: boolean
  /** Record the model's text and tool results on spans. Default false. */
  recordOutputs?: boolean
}

/** A model call's span; `end` records what came back. */
export interface ModelCallSpan {
  end(result: { finishReason?: string; inputTokens?: number; outputTokens?: number; reasoningTokens?: number; cacheReadTokens?: number; output?: unknown; error?: unknown }): void
}

/** A tool execution's span. */
export interface ToolCallSpan {
  end(result: { output?: unknown; error?: string }): void
}

type OtelApi = typeof import('@opentelemetry/api')

const SPAN_KIND_CLIENT = 2 // SpanKind.CLIENT, without importing the api for a constant
const STATUS_ERROR = 2 // SpanStatusCode.ERROR

let api: OtelApi | null | undefined
function loadApi(): OtelApi | null {
  if (api === undefined) {
    try {
      api = require('@opentelemetry/api') as OtelApi
    } catch {
      api = null // not installed: no spans
    }
  }
  return api
}

interface OpenTurn {
  span: TelemetrySpan
  context: unknown
  state?: { name: string; span: TelemetrySpan }
}

/**
 * One engine's spans. `observe` is subscribed to the engine's bus; the step and the tool
 * runner open model-call and tool spans under the turn's span.
 *
 * @example
 * const telemetry = new Telemetry({ tracer: provider.getTracer('app') }, console.error, isFinalState)
 * bus.subscribe((event) => telemetry.observe(event))
 */
export class Telemetry {
  private readonly turns = new Map<string, OpenTurn>()
  private readonly tracer: SafeTracer | undefined
  /** No tracer of the app's: the API's global one, whose spans record nothing until an SDK registers a provider. */
  private readonly global: boolean
  readonly recordInputs: boolean
  readonly recordOutputs: boolean

  /**
   * @param onError told when the tracer or a span throws: that span is skipped (or left
   * unfinished) and the turn goes on. Telemetry never fails a turn.
   * @param isFinal whether a state ends the turn (the chart's `isFinalState`: machines/ sits
   * beside this folder, not below it)
   */
  constructor(options: TelemetryOptions, onError: (error: unknown) => void, private readonly isFinal: (state: string) => boolean) {
    const otel = loadApi()
    const tracer = options.tracer ?? (otel ? (otel.trace.getTracer('turnchart') as unknown as TelemetryTracer) : undefined)
    // parent/child links need the api's context functions
    this.tracer = tracer && otel ? guardedTracer(tracer, onError) : undefined
    this.global = options.tracer === undefined
    this.recordInputs = options.recordInputs === true
    this.recordOutputs = options.recordOutputs === true
  }

  /** Turn and state spans from the turn's transitions. */
  observe(event: TransitionEvent): void {
    if (event.type !== 'turn.transition' || !this.tracer || !event.turnId || !event.sessionId || !event.to) return
    const turn = this.turn(event.turnId, event.sessionId)
    if (!turn) return
    if (turn.state) {
      if (event.event) turn.state.span.setAttribute('turnchart.state.exit_event', event.event)
      turn.state.span.end()
      turn.state = undefined
    }
    if (this.isFinal(event.to)) {
      turn.span.setAttribute('turnchart.turn.outcome', event.to)
      if (event.to === 'failed') turn.span.setStatus({ code: STATUS_ERROR, message: 'the turn failed' })
      turn.span.end()
      this.turns.delete(event.turnId)
      return
    }
    const span = this.tracer.startSpan(`turnchart.state ${event.to}`, { attributes: { 'turnchart.state': event.to, 'turnchart.turn.id': event.turnId } }, turn.context)
    if (span) turn.state = { name: event.to, span }
  }

  /**
   * Opens a model call's span under the turn's span (GenAI `chat` operation).
   *
   * @example
   * const span = telemetry.modelCall({ turnId, sessionId, provider, model, step, attempt })
   * span?.end({ finishReason: 'stop', inputTokens: 10, outputTokens: 5 })
   */
  modelCall(call: { turnId: string; sessionId: string; provider: string; model: string; step?: number; attempt?: number; operation?: string; input?: () => unknown }): ModelCallSpan | undefined {
    const turn = this.tracer && this.turn(call.turnId, call.sessionId)
    if (!turn || !this.tracer) return undefined
    const operation = call.operation ?? 'chat'
    const attributes: Record<string, string | number | boolean> = {
      'gen_ai.operation.name': operation,
      'gen_ai.provider.name': call.provider,
      'gen_ai.request.model': call.model,
      'turnchart.turn.id': call.turnId,
      'turnchart.session.id': call.sessionId,
    }
    if (call.step !== undefined) attributes['turnchart.step'] = call.step
    if (call.attempt !== undefined) attributes['turnchart.attempt'] = call.attempt
    if (this.recordInputs && call.input) attributes['gen_ai.input.messages'] = json(call.input())
    const span = this.tracer.startSpan(`${operation} ${call.model}`, { kind: SPAN_KIND_CLIENT, attributes }, turn.context)
    if (!span) return undefined
    return {
      end: (result) => {
        if (result.finishReason !== undefined) span.setAttribute('gen_ai.response.finish_reasons', [result.finishReason])
        if (result.inputTokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', result.inputTokens)
        if (result.outputTokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', result.outputTokens)
        if (result.reasoningTokens) span.setAttribute('gen_ai.usage.reasoning_tokens', result.reasoningTokens)
        if (result.cacheReadTokens) span.setAttribute('gen_ai.usage.cache_read_input_tokens', result.cacheReadTokens)
        if (this.recordOutputs && result.output !== undefined) span.setAttribute('gen_ai.output.messages', json(result.output))
        if (result.error !== undefined) failSpan(span, result.error)
        span.end()
      },
    }
  }

  /**
   * Opens a tool execution's span under the turn's span (GenAI `execute_tool` operation).
   *
   * @example
   * const span = telemetry.toolCall({ turnId, sessionId, tool: 'bash', callId, input })
   * span?.end({ output })
   */
  toolCall(call: { turnId: string; sessionId: string; tool: string; callId: string; input: unknown }): ToolCallSpan | undefined {
    const turn = this.tracer && this.turn(call.turnId, call.sessionId)
    if (!turn || !this.tracer) return undefined
    const attributes: Record<string, string | number | boolean> = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.tool,
      'gen_ai.tool.call.id': call.callId,
      'turnchart.turn.id': call.turnId,
    }
    if (this.recordInputs) attributes['gen_ai.tool.call.arguments'] = json(call.input)
    const span = this.tracer.startSpan(`execute_tool ${call.tool}`, { attributes }, turn.context)
    if (!span) return undefined
    return {
      end: (result) => {
        if (this.recordOutputs && result.output !== undefined) span.setAttribute('gen_ai.tool.call.result', json(result.output))
        if (result.error !== undefined) failSpan(span, result.error)
        span.end()
      },
    }
  }

  /** The turn's span, started on first use (a model call may start before its transition is published). */
  private turn(turnId: string, sessionId: string): OpenTurn | undefined {
    let turn = this.turns.get(turnId)
    const otel = loadApi()
    if (!turn && this.tracer && otel) {
      // The AI SDK installs the API, so it is there in most apps, most often with no SDK behind it:
      // a turn started then has no spans (five no-op spans a step, each behind the guard's proxy);
      // one started after a provider is registered has them.
      if (this.global && !providerRegistered(otel)) return undefined
      const span = this.tracer.startSpan('turnchart.turn', { attributes: { 'turnchart.turn.id': turnId, 'turnchart.session.id': sessionId } })
      if (!span) return undefined
      turn = { span, context: otel.trace.setSpan(otel.context.active(), span as never) }
      this.turns.set(turnId, turn)
    }
    return turn
  }
}

/** Whether an SDK registered a global tracer provider (the API's proxy delegates to the no-op one until then). */
function providerRegistered(otel: OtelApi): boolean {
  const provider = otel.trace.getTracerProvider() as { getDelegate?: () => object }
  const delegate = provider.getDelegate?.()
  return delegate === undefined || delegate.constructor.name !== 'NoopTracerProvider'
}

function failSpan(span: TelemetrySpan, error: unknown): void {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : json(error)
  span.setAttribute('error.type', error instanceof Error ? error.name : 'error')
  span.recordException(error instanceof Error ? error : message)
  span.setStatus({ code: STATUS_ERROR, message })
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * The app's tracer behind a boundary: a `startSpan` that throws gives no span (the caller
 * skips it), and a span method that throws is ignored. A broken tracer costs spans, never a
 * turn (and never an unhandled rejection).
 */
/** A tracer that gives no span (rather than throwing) when the app's tracer fails. */
interface SafeTracer {
  startSpan(...args: Parameters<TelemetryTracer['startSpan']>): TelemetrySpan | undefined
}

function guardedTracer(tracer: TelemetryTracer, onError: (error: unknown) => void): SafeTracer {
  const safely = <T>(run: () => T, fallback: T): T => {
    try {
      return run()
    } catch (error) {
      onError(error)
      return fallback
    }
  }
  // A proxy, not a copy: the span still is the SDK's own (its `spanContext()` links child spans).
  const guardSpan = (span: TelemetrySpan): TelemetrySpan =>
    new Proxy(span, {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver)
        return typeof value === 'function' ? (...args: unknown[]) => safely(() => (value as (...a: unknown[]) => unknown).apply(target, args), undefined) : value
      },
    })
  return {
    startSpan: (...args) => {
      const span = safely<TelemetrySpan | undefined>(() => tracer.startSpan(...args), undefined)
      return span ? guardSpan(span) : undefined
    },
  }
}
