/** Test helpers shipped as `turnchart/testing`. */
export * from './scripted-server'
export { recordedModel, type RecordedModel, type RecordedModelOptions, type RecordedCallInfo } from './recorded-model'
export { storeSource, type RecordingSource } from './recording-source'
export type { RecordedOutcome } from './recorded-turn'
export { RecordingDivergedError, CassetteFormatError } from '../core/errors'
