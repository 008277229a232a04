/**
 * Errors of recorded model responses (`turnchart/testing`): a re-run that asked for a call its
 * recording does not have, and a cassette file that cannot be read.
 */
import { isNamed, TurnchartError } from './turnchart-error'

/**
 * A model built from a recording (`recordedModel`, `cassetteModel`) was asked for a call the
 * recording does not have: the run diverged (another tool result, another system prompt,
 * another number of steps). Thrown by the model's `doStream`, so the turn fails with it (it is
 * not retried). `call` is the 1-based model call of the run; `step` and `attempt` are the
 * recorded call's (for a call beyond the recording: the step that would come next).
 */
export class RecordingDivergedError extends TurnchartError {
  readonly name = 'RecordingDivergedError'
  /** What was re-run: `turn <id>` or `cassette <file>`. */
  readonly recording: string
  readonly call: number
  readonly step?: number
  readonly attempt?: number
  /** `step` (a step's model call) or `summary` (a compaction's summary request). */
  readonly kind?: 'step' | 'summary'
  /** Why the call is not the recorded one. */
  readonly reason: string
  constructor(input: { recording: string; call: number; step?: number; attempt?: number; kind?: 'step' | 'summary'; reason: string }) {
    const where = input.step === undefined ? `model call ${input.call}` : `step ${input.step}${input.kind === 'summary' ? ' (its compaction summary request)' : ''}, model call ${input.call}`
    super(`the run left the recording of ${input.recording} at ${where}: ${input.reason}`)
    this.recording = input.recording
    this.call = input.call
    this.step = input.step
    this.attempt = input.attempt
    this.kind = input.kind
    this.reason = input.reason
  }
  static isInstance = isNamed<RecordingDivergedError>('RecordingDivergedError')
}

/** A cassette file that is not one: unreadable, not JSON, or of a format version turnchart does not know. */
export class CassetteFormatError extends TurnchartError {
  readonly name = 'CassetteFormatError'
  readonly file: string
  readonly reason: string
  constructor(file: string, reason: string) {
    super(`${file} is not a turnchart cassette: ${reason}`)
    this.file = file
    this.reason = reason
  }
  static isInstance = isNamed<CassetteFormatError>('CassetteFormatError')
}
