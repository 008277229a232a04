/**
 * `recordCassette(model, { file })`: a real model that writes each `doStream` call it makes to
 * a cassette file (the request summary, then the stream parts as they pass, then how the
 * stream ended), for `cassetteModel(file)` to play back in tests with no provider.
 *
 * A wrapper of our own rather than the AI SDK's `wrapLanguageModel`: ai v6's wrapper reports
 * `specificationVersion: 'v3'` whatever it wraps, so it would mislabel a V4 model; this one keeps
 * the wrapped model's version, properties and `doGenerate` (which it does not record).
 */
import { createRedactor } from '../core/secrets/redact-secrets'
import type { EngineModel } from '../config/options'
import { allowlisted, cassetteError, toCassetteJson } from './cassette-json'
import { cassetteFormat, cassetteVersion, writeCassette, type Cassette, type CassetteCall } from './cassette'
import { requestSummary } from './request-summary'

export interface RecordCassetteOptions {
  /** Where the cassette is written, after each call ends (created or replaced). */
  file: string
  /** Values to redact wherever they appear (e.g. the provider's API key), besides the store's patterns. */
  secrets?: string[]
}

/** The recording model: the wrapped model's type, and the cassette as recorded so far. */
export type RecordingModel<M> = M & { readonly cassette: Cassette }

type StreamingModel = { specificationVersion: string; provider: string; modelId: string; doStream(options: unknown): PromiseLike<{ stream: ReadableStream<unknown>; response?: { headers?: Record<string, string | undefined> } }> }

/**
 * @example
 * const model = recordCassette(createOpenAICompatible({ name: 'lab', baseURL, apiKey })('qwen'), { file: 'cassettes/qwen.json', secrets: [apiKey] })
 * const engine = await createEngine({ model, tools })
 * await engine.prompt(session.id, 'What is in ./src?').done // cassettes/qwen.json now holds its calls
 */
export function recordCassette<M extends EngineModel>(model: M, options: RecordCassetteOptions): RecordingModel<M> {
  const inner = model as unknown as StreamingModel
  const redactor = createRedactor(options.secrets ?? [])
  const cassette: Cassette = {
    format: cassetteFormat,
    version: cassetteVersion,
    model: { provider: inner.provider, modelId: inner.modelId, specificationVersion: inner.specificationVersion },
    calls: [],
  }
  const save = () => writeCassette(options.file, cassette)

  async function doStream(callOptions: unknown) {
    const call: CassetteCall = { request: requestSummary(callOptions, redactor) }
    cassette.calls.push(call)
    let result: Awaited<ReturnType<StreamingModel['doStream']>>
    try {
      result = await inner.doStream(callOptions)
    } catch (error) {
      call.error = cassetteError(error, redactor)
      save()
      throw error
    }
    const parts: unknown[] = []
    const headers = result.response?.headers
    call.response = { ...(headers ? { headers: allowlisted(headers) } : {}), parts, end: 'cancel' }
    const reader = result.stream.getReader()
    let ended = false
    const end = (how: NonNullable<CassetteCall['response']>['end']) => {
      if (ended) return
      ended = true
      call.response!.end = how
      save()
    }
    const stream = new ReadableStream<unknown>({
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>
        try {
          next = await reader.read()
        } catch (error) {
          end({ error: cassetteError(error, redactor) })
          controller.error(error)
          return
        }
        if (next.done) {
          end('close')
          controller.close()
          return
        }
        parts.push(toCassetteJson(next.value, redactor))
        controller.enqueue(next.value)
      },
      cancel(reason) {
        end('cancel')
        return reader.cancel(reason)
      },
    })
    return { ...result, stream }
  }

  // Everything else is the wrapped model's own (methods bound to it: providers keep private fields).
  return new Proxy(model as object, {
    get(target, property) {
      if (property === 'doStream') return doStream
      if (property === 'cassette') return cassette
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as RecordingModel<M>
}
