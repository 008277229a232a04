/**
 * The stored and published shapes of sessions, messages and parts.
 * Field names follow what agent UIs already know (opencode's message-v2 shapes).
 */
import type { JSONValue } from 'ai'
import type { SerializedError } from './errors'

export interface Tokens {
  input: number
  output: number
  reasoning: number
  cache: { read: number; write: number }
}

export interface SessionInfo {
  id: string
  title: string | null
  time: { created: number; updated: number }
  /** Defaults for the session's turns (`createSession({ system, model, tools, settings })`). */
  defaults?: SessionDefaults
  /** Set after `engine.revert`: the last message still shown; later ones are hidden until the next prompt deletes them (or `unrevert`). */
  revertedTo?: string
  /**
   * The app's own data about the session (`createSession({ metadata })`), stored as JSON and
   * returned as given, e.g. `{ owner: 'user_42' }` for the chat handler's `authorize` to read.
   * turnchart never reads it; a fork copies it.
   */
  metadata?: SessionMetadata
  /**
   * Set on a child session (run trees): the session of the turn whose tool call started it. A
   * child session is hidden from `listSessions` unless asked for, and goes with its parent
   * (deleted, forked).
   */
  parentSessionId?: string
  /**
   * The tenant the session belongs to (`createSession({ tenant })`): per-tenant usage
   * (`engine.tenantUsage`) sums its sessions. A fork and a run tree's child sessions keep it.
   */
  tenant?: string
  /** Set on a session made by `engine.forkTurn`: the stored turn and step its history was copied from. */
  forkedFrom?: ForkOrigin
}

/** Where a forked session came from (`engine.forkTurn`): the turn, its session, and the last step copied. */
export interface ForkOrigin {
  sessionId: string
  turnId: string
  step: number
}

/** A session's metadata: a JSON object of the app's. */
export type SessionMetadata = Record<string, unknown>

export interface MessageInfo {
  id: string
  sessionId: string
  role: 'user' | 'assistant'
  /** The turn that created the message. */
  turnId?: string
  time: { created: number; completed?: number }
  error?: SerializedError
  finish?: string
  tokens?: Tokens
  cost?: number
  /** True on the assistant message that holds a compaction summary. */
  summary?: boolean
}

interface PartBase {
  id: string
  sessionId: string
  messageId: string
  /** Step number within the turn (1-based); absent on user parts. */
  step?: number
  /** Attempt number of that step (1-based): parts of a failed attempt stay, closed. */
  attempt?: number
}

/**
 * What a provider attached to a part, by provider name (e.g. `{ anthropic: { signature } }`,
 * `{ google: { thoughtSignature } }`, `{ openai: { itemId, reasoningEncryptedContent } }`).
 * Sent back with the part on the next request, as the provider requires.
 */
export type PartProviderMetadata = Record<string, Record<string, unknown>>

export interface TextPart extends PartBase {
  type: 'text' | 'reasoning'
  text: string
  time: { start: number; end?: number }
  /** The provider's metadata for this text or reasoning (signatures, item ids), when it sent some. */
  providerMetadata?: PartProviderMetadata
}

/**
 * A tool call's state. `input` is what the tool runs with and what the model is shown as the
 * call's input; `modelInput` is the model's own input when an approval edited it.
 */
export type ToolState =
  | {
      status: 'pending'
      input: unknown
      /** `required`: the call waits for `engine.approve` / `engine.deny` (state `awaiting-approval`). */
      approval?: 'required'
      /** When its approval expires (`approvalTimeoutMs`): the sweep denies it then, its receipt `expired`. */
      expiresAt?: number
    }
  | {
      status: 'running'
      input: unknown
      modelInput?: unknown
      /** Which execution of the call this is (1 when absent): a re-run (idempotent tool after a crash, reconcile's `done: false`, `resolveCall` retry) counts one more. */
      execution?: number
      time: { start: number }
    }
  /**
   * Nobody knows whether the call's effect happened: it was running when its engine died, its
   * result could not be stored, or it threw `CallOutcomeUnknownError`; its tool's `reconcile`
   * could not tell (or it has none). The turn waits (state `call-in-doubt`) for
   * `engine.resolveCall`; the model is not called meanwhile.
   */
  | {
      status: 'in-doubt'
      input: unknown
      modelInput?: unknown
      execution: number
      /** Why the outcome is unknown (`restart`: the engine died mid-call; else the tool's message). */
      reason: string
      /** The tool's `reconcile` was asked for this execution already (and could not tell). */
      reconciled?: boolean
      time: { start: number }
    }
  /**
   * The tool returned `defer()`: its result arrives later through `engine.resolveCall`. The turn
   * waits (state `awaiting-calls`) until every call of the step has its result; `deadline`
   * (epoch ms, stored) settles it as an error when it passes.
   */
  | {
      status: 'deferred'
      input: unknown
      modelInput?: unknown
      execution: number
      deadline?: number
      /** What the call returns at its deadline (`defer({ onDeadline })`, a sleep's result); absent: the deadline is an error the model sees. */
      onDeadline?: { output: unknown }
      time: { start: number }
    }
  | {
      status: 'completed'
      input: unknown
      modelInput?: unknown
      output: unknown
      /**
       * What the model was sent instead of `output`: the tool's `toModelOutput` result (an AI SDK
       * `ToolResultOutput`, e.g. `{ type: 'text', value }`), made once when the call completed.
       * Absent: the model is sent `output`.
       */
      modelOutput?: unknown
      time: { start: number; end: number }
    }
  | {
      status: 'error'
      input: unknown
      modelInput?: unknown
      error: string
      metadata?: Record<string, unknown>
      time: { start: number; end: number }
    }

/** A tool call that waits for `engine.resolveCall`: its outcome is unknown (`in-doubt`) or its result comes later (`deferred`). */
export interface WaitingCall {
  callId: string
  tool: string
  input: unknown
  status: 'in-doubt' | 'deferred'
  /** In doubt: why (`restart`: its engine died mid-call; else the tool's message). */
  reason?: string
  /** Deferred: when its stored deadline passes (epoch ms). */
  deadline?: number
}

/**
 * What was decided of a call that asked for approval, kept on its tool part (and in its turn's
 * log: `engine.approvalReceipts(sessionId)` reads both, so a receipt survives a fork and a revert).
 */
export interface ApprovalReceipt {
  /** `approved`, `denied` (by a person), or `expired` (`approvalTimeoutMs` passed: the model sees a denial). */
  decision: 'approved' | 'denied' | 'expired'
  /** Who decided: the `by` of `approve` / `deny` (for the chat handler, the identity its `authorize` returned); absent when nobody said. */
  by?: string
  /** When it was decided (ms). */
  at: number
  /**
   * The hex SHA-256 of the canonical JSON (keys sorted, recursively) of the input decided on:
   * for an approval the input the tool runs with (the edited one when the approver edited it).
   * The tool runs only with an input whose digest is this one.
   */
  inputDigest: string
  /** An approver's edit: the model's input was replaced (its digest differs from `inputDigest`). */
  edited?: true
  /** A denial's reason, as given. */
  reason?: string
}

export interface ToolPart extends PartBase {
  type: 'tool'
  callId: string
  tool: string
  state: ToolState
  /** The decision on the call, when it asked for approval and was decided (approved, denied, expired). */
  receipt?: ApprovalReceipt
  /** The provider's metadata for the call (e.g. a Gemini thought signature), when it sent some. */
  providerMetadata?: PartProviderMetadata
}

export interface StepStartPart extends PartBase {
  type: 'step-start'
  time: { start: number }
  /** A turn with fallback models (`model: ['primary', 'backup']`): the name of the model this attempt asked. */
  model?: string
  /** What the provider warned about for this call (a setting it does not support, e.g. `topK`), as it sent it. */
  warnings?: Array<Record<string, unknown> & { type: string }>
}

export interface StepFinishPart extends PartBase {
  type: 'step-finish'
  reason: string
  tokens: Tokens
  cost: number
  time: { start: number }
}

export interface CompactionPart extends PartBase {
  type: 'compaction'
  auto: boolean
  time: { start: number }
}

/**
 * A file: an image or file of a user prompt, or one the model produced. A URL, or the bytes
 * (base64) stored in the database (a prompt's up to `maxFileBytes`). `image: true` when a prompt
 * gave it as an AI SDK image part.
 */
export interface FilePart extends PartBase {
  type: 'file'
  /** Absent only on a prompt image given without one (the provider detects it). */
  mediaType?: string
  filename?: string
  url?: string
  /** Base64 bytes. */
  data?: string
  image?: boolean
  providerMetadata?: PartProviderMetadata
  time?: { start: number; end?: number }
}

/** A source the model cited (a web page, a document). Stored, not sent back to the model. */
export interface SourcePart extends PartBase {
  type: 'source'
  sourceType: string
  sourceId: string
  url?: string
  title?: string
  mediaType?: string
  filename?: string
  providerMetadata?: PartProviderMetadata
}

export type Part = TextPart | ToolPart | StepStartPart | StepFinishPart | CompactionPart | FilePart | SourcePart

/** Tokens and cost. */
export interface Usage {
  tokens: Tokens
  cost: number
}

/** A turn's usage: its steps and its compactions (the summary requests), together and apart. */
export interface TurnUsage extends Usage {
  turnId: string
  compaction: Usage
  /**
   * Run trees: the usage of the turn's descendants (child turns started by its tools, theirs,
   * …), apart; `tree` is the turn's own and its descendants' together. Absent on a turn that
   * started no child.
   */
  descendants?: Usage
  tree?: Usage
}

/**
 * `engine.usage(sessionId)`: totals of every turn the session ran (reverted ones included), and
 * each turn's. `tokens` and `cost` are the session's own turns; `descendants` the child turns
 * they started (recursively), and `tree` both together.
 */
export interface SessionUsage extends Usage {
  turns: TurnUsage[]
  descendants: Usage
  tree: Usage
}

/**
 * Limits over a run tree (a turn and every child turn its tools start, recursively), in the
 * units of `Usage`: tokens (`input`, `output`, `total` = input + output), `cost`, model calls
 * (`steps`, retries and summary requests included) and wall time since the root turn started
 * (`wallMs`). Checked before every model call in the tree against the tree's usage so far; past
 * one, the call is not made and the turn ends `failed` with `BudgetExceededError`.
 */
export interface Budget {
  tokens?: { input?: number; output?: number; total?: number }
  cost?: number
  steps?: number
  wallMs?: number
}

export interface MessageWithParts {
  info: MessageInfo
  parts: Part[]
}

/** A turn's write waiting on the database: `operation` names it, `since` when the wait began. */
export interface StorageWait {
  operation: string
  since: number
}

/** A database outage a turn's write waited out (`storage.outageMs`): which write, for how long. */
export interface StorageWaited {
  operation: string
  waitedMs: number
}

/** What a session is doing now. */
export type SessionStatus =
  | { type: 'idle' }
  /**
   * `approvals`: the calls waiting for a decision, when `state` is `awaiting-approval` (from
   * `readStatus`); run trees: in `tool-running`, those its descendant turns wait for, each with
   * that turn's id (`approve(turnId, callId)` answers it).
   */
  | {
      type: 'busy'
      turnId: string
      state: string
      approvals?: Array<{ callId: string; tool: string; input: unknown; turnId?: string }>
      /** In `call-in-doubt` / `awaiting-deferred`: the calls that wait for `engine.resolveCall`. */
      calls?: WaitingCall[]
      /** The turn's write waits on the database (an outage, `storage.outageMs`): which write, since when. */
      storage?: StorageWait
    }
  /**
   * Waiting to retry: `attempt` is the attempt that failed, numbered as on parts (the first
   * request of a step is attempt 1), so the next request is `attempt + 1`, at time `next`.
   */
  | { type: 'retry'; turnId: string; attempt: number; message: string; next: number; storage?: StorageWait }

export type TurnOutcome = 'completed' | 'aborted' | 'failed'

/** A row of the persisted transition log of a turn. */
export interface TransitionRecord {
  turnId: string
  seq: number
  from: string
  event: string
  to: string
  /** The event's payload as sent to the machine (control data only). */
  payload: Record<string, unknown>
  time: number
  /** Ids of the parts written with this transition (changed since the previous one). */
  parts?: string[]
  /**
   * The database outages the turn's writes waited out since the previous row, this row's own
   * write included (its wait measured to the attempt that went through).
   */
  storageWaits?: StorageWaited[]
}

/** The persisted record of a turn. */
export interface TurnRecord {
  id: string
  sessionId: string
  state: string
  outcome: TurnOutcome | null
  step: number
  attempt: number
  retryAt: number | null
  error: SerializedError | null
  time: { created: number; updated: number }
  /** The engine that runs the turn, and until when its lease holds (ms). */
  owner?: string | null
  leaseUntil?: number | null
  /** Fencing token: incremented each time an engine claims the turn. */
  epoch?: number
  /** The model and tool names, system prompt and call settings the turn runs with (never its headers). */
  options?: StoredTurnOptions
  /** Run trees: the turn whose tool call started this one (a child turn), and that call's id. */
  parentTurnId?: string
  parentCallId?: string
  /** Run trees: the tree's first turn (set on child turns only). */
  rootTurnId?: string
}

export function emptyTokens(): Tokens {
  return { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }
}

/** A user part of a prompt before it has ids and times (text, or an image or file). */
export type UserPartDraft = { type: 'text'; text: string } | Omit<FilePart, 'id' | 'sessionId' | 'messageId' | 'time'>

/** The AI SDK's call settings, as `streamText` takes them. */
export interface CallSettings {
  temperature?: number
  /** Default: `limits.output` when set. */
  maxOutputTokens?: number
  topP?: number
  topK?: number
  seed?: number
  stopSequences?: string[]
  presencePenalty?: number
  frequencyPenalty?: number
  /** Extra HTTP headers of the model requests. Kept in memory only: a turn recovered by another process runs without them. */
  headers?: Record<string, string>
  /** Provider-specific options, e.g. `{ openai: { reasoningEffort: 'low' } }`. */
  providerOptions?: Record<string, Record<string, JSONValue>>
}

/** `'auto'` (default), `'none'`, `'required'`, or one tool by name. */
export type ToolChoiceOption = 'auto' | 'none' | 'required' | { type: 'tool'; toolName: string }

/** Call settings plus the turn's tool choice and step limit. */
export interface TurnSettings extends CallSettings {
  toolChoice?: ToolChoiceOption
  /** Steps (LLM calls) one turn may make; a turn whose last allowed step still calls tools fails with `StepLimitError`. */
  maxSteps?: number
}

/**
 * One finished step as a stop condition sees it: the fields of the AI SDK's `StepResult` that
 * turnchart keeps (so `stepCountIs`/`isStepCount`, `hasToolCall` and conditions written for
 * `streamText` read the same values).
 */
export interface StopConditionStep {
  /** 1-based, across the turn (always set; optional in the type as ai v6's StepResult has no such field). */
  stepNumber?: number
  text: string
  reasoningText: string | undefined
  toolCalls: Array<{ type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }>
  toolResults: Array<{ type: 'tool-result'; toolCallId: string; toolName: string; input: unknown; output: unknown }>
  finishReason: string
  usage: { inputTokens: number | undefined; outputTokens: number | undefined; totalTokens: number | undefined }
}

/**
 * When a turn stops calling the model: the AI SDK's stop conditions (`stepCountIs(n)` of ai
 * v6, `isStepCount(n)` of ai v7, `hasToolCall(name)`), or a function of the steps so far. Checked
 * after each step whose tools have run: when one holds, the turn ends `completed`.
 */
// (a method's parameter is compared both ways: the AI SDK's conditions, typed for its whole
// StepResult, are accepted, and they read only what StopConditionStep holds)
export type StopCondition = { bivariant(options: { steps: StopConditionStep[] }): boolean | PromiseLike<boolean> }['bivariant']

/** Options of `engine.prompt`, flat as `streamText` takes them. */
/**
 * A structured output specification: the AI SDK's `Output.object({ schema })` (ai v6 and v7
 * alike; `Output.array`, `Output.choice` and `Output.json` too), as `streamText` and
 * `ToolLoopAgent` take it. turnchart sends its `responseFormat` with every model call of the
 * turn and parses the final answer with its `parseCompleteOutput` (docs/behaviour.md).
 */
export interface StructuredOutput<OUTPUT = unknown> {
  readonly name: string
  readonly responseFormat: PromiseLike<unknown>
  parseCompleteOutput(
    options: { text: string },
    context: { response: { id: string; timestamp: Date; modelId: string }; usage: never; finishReason: never },
  ): Promise<OUTPUT>
}

export interface PromptOptions extends TurnSettings {
  /**
   * When the turn stops calling the model (one condition or several: any that holds stops it).
   * Default: the engine's `stopWhen`. Kept in memory only, like `headers`: a turn another
   * process recovers runs with that engine's own `stopWhen`.
   */
  stopWhen?: StopCondition | StopCondition[]
  /**
   * A model registered in `models` (default: the session's, else `'default'`), or a list of them
   * (fallback models): each step asks the first; when the provider fails it (an outage,
   * overload, a timeout, a long rate-limit wait) after `retry.attemptsPerModel` attempts, the
   * step goes on with the next.
   */
  model?: string | string[]
  /** System prompt of this turn (default: the session's, else the engine's). */
  system?: string
  /** Names of registered tools this turn may use (default: the session's, else all). */
  tools?: string[]
  /** Limits over the turn's run tree (default: the session's, else the engine's), field by field. Stored with the turn. */
  budget?: Budget
  /**
   * Structured output: `Output.object({ schema })` (from `ai`). The turn runs its tools as
   * usual; its final answer is parsed and validated against the schema and `turn.done`'s
   * `output` is the object. An answer that does not match is sent back to the model once with
   * the reasons; a second miss fails the turn with `StructuredOutputError`. Default: the
   * engine's `output`. Kept in memory only, like `stopWhen`.
   */
  output?: StructuredOutput
}

/** Defaults of a session's turns: `engine.createSession({ title, system, model, tools, settings })`. Stored. */
export interface SessionDefaults {
  system?: string
  /** A registered model's name, or a list of them (fallback models, as `PromptOptions.model`). */
  model?: string | string[]
  tools?: string[]
  /** Call settings and `toolChoice` (not `headers`: they are never stored; `maxSteps` is per engine and per prompt). */
  settings?: Omit<TurnSettings, 'headers' | 'maxSteps'>
  /** Limits over each run tree the session's turns start (see `Budget`). */
  budget?: Budget
}

/** What is stored with a turn: names and JSON only. */
export interface StoredTurnOptions {
  /** The model the turn asks first. */
  model: string
  /** Fallback models: the names asked after `model`, in order, when the provider fails it. */
  fallbacks?: string[]
  system?: string
  /** Tool names; absent: every registered tool. */
  tools?: string[]
  settings: Omit<TurnSettings, 'headers' | 'maxSteps'>
  /** The budget of the run tree this turn is the root of (the prompt's over the session's over the engine's). */
  budget?: Budget
  /**
   * The tools the turn may call, pinned when it started: name → hex SHA-256 of the input
   * schema's canonical JSON (src/tools/tool-fingerprint.ts). A call of a tool removed or changed
   * since is an error part naming the tool; absent on turns of a version before it.
   */
  toolFingerprint?: Record<string, string>
  /** The provider's id of the turn's model when it started (`modelId`, e.g. `gpt-4o-mini`): `engine.upgradeCheck()` names a model changed since. */
  modelId?: string
  /** A turn a schedule started (`engine.schedule`): which one, and the occurrence (epoch ms). */
  schedule?: ScheduleOccurrence
}

/** Which schedule started a turn, and at which of its occurrences (epoch ms). */
export interface ScheduleOccurrence {
  id: string
  occurrence: number
}
