/** Test helpers shipped as `turnchart/testing`. */
export * from './scripted-server'
export { recordedModel, type RecordedModel, type RecordedModelOptions, type RecordedCallInfo } from './recorded-model'
export { storeSource, type RecordingSource } from './recording-source'
export type { RecordedOutcome } from './recorded-turn'
export { rerunTurn, type RerunOptions, type RerunResult, type RerunSide } from './rerun-turn'
export type { ToolDrift } from './tool-drift'
export type { Divergence } from './live-after-divergence'
export { recordCassette, type RecordCassetteOptions, type RecordingModel } from './record-cassette'
export { cassetteModel, type CassetteModel, type CassetteModelOptions } from './cassette-model'
export { readCassette, type Cassette, type CassetteCall, type RequestSummary } from './cassette'
export type { CassetteError } from './cassette-json'
export { comparableParts, firstDifference, type ComparablePart } from './comparable-parts'
export { RecordingDivergedError, CassetteFormatError } from '../core/errors'
export { storeConformance, type StoreConformanceCase, type StoreInitializer } from './store-conformance'
/** The store of a `database` option as an engine opens it (migrated; `close()` closes what it opened): what a `storeConformance` initializer of turnchart's own backends creates. */
export { openStore } from '../engine/open-store'
export { trajectoryOf, readTrajectory, type Trajectory, type TrajectoryStep, type TrajectoryToolCall, type TrajectorySource } from './trajectory'
export {
  diffTrajectories,
  formatTrajectoryDiff,
  type TrajectoryDiff,
  type TrajectoryDifference,
  type TrajectoryField,
  type DiffTrajectoriesOptions,
  type FormatTrajectoryDiffOptions,
} from './trajectory-diff'
export {
  runSuite,
  score,
  EvalSuiteError,
  type EvalSuite,
  type EvalCase,
  type Scorer,
  type ScorerInput,
  type ScoreOutcome,
  type ScoreResult,
  type CaseResult,
  type SuiteResult,
  type SuiteOptions,
} from './eval-suite'
