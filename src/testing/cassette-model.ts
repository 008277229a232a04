/**
 * `cassetteModel(file)`: plays back a cassette written by `recordCassette`. Each `doStream`
 * call gets the recorded call of the same position: its stream parts and its end (the stream
 * closes, fails with the recorded error, or stays open until its reader stops, as after an
 * abort), or the error the request failed with. Each request's prompt is first compared with
 * the recorded one: a run that diverged fails with `RecordingDivergedError`.
 */
import type { EngineModel } from '../config/options'
import { RecordingDivergedError } from '../core/errors'
import { createRedactor } from '../core/secrets/redact-secrets'
import { checkCassette, readCassette, type Cassette } from './cassette'
import { errorOf, fromCassetteJson } from './cassette-json'
import { partStream, type StreamEnd } from './part-stream'
import { promptDifference } from './prompt-difference'
import { requestSummary } from './request-summary'
import type { StreamPart } from './stored-stream'

export interface CassetteModelOptions {
  /** Compare each request's prompt with the recorded one (default true); `false` answers by position only. */
  checkPrompts?: boolean
  /** The secrets the recording redacted (`recordCassette`'s `secrets`), so a prompt holding one compares equal. */
  secrets?: string[]
}

/** The model `cassetteModel` returns: a language model object of the recorded version, and the cassette. */
export type CassetteModel = EngineModel & {
  readonly cassette: Cassette
  /** How many calls it was asked for so far. */
  readonly callsMade: number
}

/**
 * `cassette`: a file written by `recordCassette`, or its parsed content. Throws
 * `CassetteFormatError` for a file that is not a cassette.
 *
 * @example
 * const engine = await createEngine({ model: cassetteModel('cassettes/qwen.json'), tools })
 */
export function cassetteModel(cassette: string | Cassette, options: CassetteModelOptions = {}): CassetteModel {
  const label = typeof cassette === 'string' ? `cassette ${cassette}` : 'cassette'
  const recorded = typeof cassette === 'string' ? readCassette(cassette) : checkCassette(cassette, label)
  const redactor = createRedactor(options.secrets ?? [])
  let made = 0
  const diverged = (call: number, reason: string) => new RecordingDivergedError({ recording: label, call, reason })
  const model = {
    specificationVersion: recorded.model.specificationVersion,
    provider: recorded.model.provider,
    modelId: recorded.model.modelId,
    supportedUrls: {},
    cassette: recorded,
    get callsMade() {
      return made
    },
    async doGenerate() {
      throw diverged(made + 1, 'doGenerate was called: a cassette holds doStream calls (the ones turnchart and streamText make)')
    },
    async doStream(callOptions: unknown) {
      const index = made++
      const call = recorded.calls[index]
      if (!call) throw diverged(index + 1, `the cassette has ${recorded.calls.length} model calls (the run made more)`)
      if (options.checkPrompts !== false) {
        const difference = promptDifference(call.request.prompt, requestSummary(callOptions, redactor).prompt)
        if (difference) throw diverged(index + 1, difference)
      }
      if (call.error || !call.response) throw errorOf(call.error ?? { name: 'Error', message: 'the recorded call has neither a response nor an error' })
      const { response } = call
      const end: StreamEnd =
        response.end === 'close' ? { type: 'close' } : response.end === 'cancel' ? { type: 'hang' } : { type: 'error', error: errorOf(response.end.error) }
      const parts = response.parts.map((part) => fromCassetteJson(part) as StreamPart)
      return { stream: partStream(parts, end), request: {}, response: { headers: response.headers ?? {} } }
    },
  }
  // The static type is the installed ai major's model; at run time the recorded version.
  return model as unknown as CassetteModel
}
