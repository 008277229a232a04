/**
 * The real engine the model-based tests drive: the scripted OpenAI-compatible server on
 * loopback, a SQLite file, one scripted tool (`work`) whose behaviour each call takes from a
 * queue, and a second SQLite connection to the same file that the tests use to make the
 * engine's own writes fail (a trigger raising an error inside the engine's transaction).
 * A `work` call whose input has `ask: true` needs approval (`needsApproval`), so the reply
 * decides which calls wait in `awaiting-approval`.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Output, tool } from 'ai'
import { z } from 'zod'
import { CallOutcomeUnknownError, callInfo, createEngine, defer, sleep as sleepUntil, type Engine, type EngineOptions, type StepRule, type TurnchartEvent } from '../../../src'
import type { Part } from '../../../src/core/types'
import type { TurnInput } from '../../../machines/turn.types'
import { recordEvents } from '../../support/event-log'
import { startScriptedServer, type ScriptedServer } from '../../../src/testing'
import { modelFor } from '../../support/harness'

/** What the `work` tool does when it is called. */
export type ToolBehaviour =
  /** Returns `{ done: n }`. */
  | 'ok'
  /** Throws an Error: the part becomes `error`, the turn goes on. */
  | 'throw'
  /** Waits until its abort signal fires (abort, turn failure). */
  | 'block'
  /** Throws `CallOutcomeUnknownError`: the part becomes `in-doubt`, the turn waits (the rig's tool has no reconcile). */
  | 'doubt'
  /** Returns `defer()`: the part becomes `deferred`, the turn waits. */
  | 'defer'
  /** Returns `sleep({ ms: 1 hour })`: the part is deferred until then, the turn sleeps. */
  | 'sleep'

/** What the rig's own step rule (`model-rule`) answers at a visit of the step gate. */
export type GateBehaviour =
  /** No opinion: the gate goes on (steering, the budget, continue). */
  | 'continue'
  /** `complete`: the turn completes there. */
  | 'complete'
  /** `fail` with an error named in `gateFailureMessage`. */
  | 'fail'
  /** Aborts the turn while the gate decides (then no opinion). */
  | 'abort'

export const storageFailureMessage = 'model test: simulated storage failure'
export const gateFailureMessage = 'model test: the step rule failed the turn'

export interface Rig {
  server: ScriptedServer
  engine: Engine
  events: TurnchartEvent[]
  /** Behaviours of the next `work` calls, in call order (empty: 'ok'). */
  tools: ToolBehaviour[]
  /** Number of `work` calls started. */
  toolCalls: number
  /** Answers of the rig's step rule at the next gate visits, in order (empty: 'continue'). */
  gate: GateBehaviour[]
  /** Called by the step rule's 'abort' (the walk aborts its turn). */
  onGateAbort: (() => void) | undefined
  /** Makes the engine's insert of transition row `seq` of `turnId` fail inside its transaction. */
  failTransitionWrite(turnId: string, seq: number): void
  /** Fills the `limited` model's rate window with requests that stop counting in `ms`: a step's request to it waits that long. */
  fillRateWindow(ms: number): void
  /** The chart input stored with the turn (turnchart_turns.input), read over the control connection. */
  storedInput(turnId: string): TurnInput
  /** Resolves with the first event (past or future) matching `predicate`. */
  waitFor(predicate: (event: TurnchartEvent) => boolean, timeoutMs?: number): Promise<TurnchartEvent>
  close(): Promise<void>
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    }, { once: true })
  })
}

/** The structured output of walks that take the output check's edges: an object `{ n: number }`. */
export const rigOutput = Output.object({ schema: z.object({ n: z.number() }) })

export const rigDefaults: Partial<EngineOptions> = {
  limits: { context: 1000, output: 100 },
  compaction: { maxPerTurn: 1 },
  retry: { initialDelayMs: 1, maxDelayMs: 4, jitter: 0, maxAttempts: 3, attemptsPerModel: 1 },
  // (no circuits: each walk's provider failures are its own, not a state the next walk inherits)
  circuitBreaker: false,
  flushIntervalMs: 5,
  streamIdleTimeoutMs: 2000,
  // small, so that a walk reaches the step limit in a few tool steps
  maxSteps: 4,
  // a step whose `work` call says `stop: true` ends the turn once its tools ran
  stopWhen: ({ steps }) => steps.at(-1)?.toolCalls.some((call) => (call.input as { stop?: boolean }).stop === true) ?? false,
}

export async function startRig(options: Partial<EngineOptions> = {}): Promise<Rig> {
  const server = await startScriptedServer()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-model-'))
  const dbPath = path.join(dir, 'model.db')
  const queue: ToolBehaviour[] = []
  const gate: GateBehaviour[] = []
  let toolCalls = 0
  let onGateAbort: (() => void) | undefined
  const modelRule: StepRule = {
    name: 'model-rule',
    decide: async () => {
      const behaviour = gate.shift() ?? 'continue'
      if (behaviour === 'complete') return { verdict: 'complete' }
      if (behaviour === 'fail') return { verdict: 'fail', error: new Error(gateFailureMessage) }
      if (behaviour === 'abort') onGateAbort?.()
      return undefined
    },
  }
  const work = tool({
    description: 'does some work',
    // `ask: true` in a call's input: the call needs approval (the AI SDK's `needsApproval`)
    inputSchema: z.object({ n: z.number(), ask: z.boolean().optional(), stop: z.boolean().optional() }),
    needsApproval: ({ ask }) => ask === true,
    execute: async ({ n }, options) => {
      const { abortSignal } = options
      toolCalls += 1
      const behaviour = queue.shift() ?? 'ok'
      if (behaviour === 'throw') throw new Error(`work ${n} failed`)
      if (behaviour === 'block') await sleep(60_000, abortSignal!)
      if (behaviour === 'doubt') throw new CallOutcomeUnknownError({ callId: callInfo(options).callId, toolName: 'work', message: 'model test: the connection dropped' })
      if (behaviour === 'defer') return defer()
      if (behaviour === 'sleep') return sleepUntil({ ms: 3_600_000, result: { woke: n } })
      return { done: n }
    },
  })
  const engine = await createEngine({
    database: dbPath,
    model: modelFor(server),
    // (a walk whose prompt names both falls back from the first to the second: one server answers both)
    models: { backup: modelFor(server, 'backup-model'), limited: modelFor(server, 'limited-model') },
    // (a walk whose prompt names `limited` finds its window filled by the rig first: its step is throttled)
    rateLimits: { limited: { requestsPerMinute: 1000 } },
    tools: { work },
    stepRules: [modelRule],
    ...rigDefaults,
    ...options,
  })
  const control = new Database(dbPath)
  control.pragma('busy_timeout = 5000')
  let triggers = 0
  const { events, waitFor } = recordEvents(engine)
  return {
    server,
    engine,
    events,
    tools: queue,
    gate,
    get toolCalls() {
      return toolCalls
    },
    get onGateAbort() {
      return onGateAbort
    },
    set onGateAbort(abort) {
      onGateAbort = abort
    },
    fillRateWindow(ms) {
      // (a second's requests count until a minute, a second and the 200 ms margin after its start)
      const admitted = JSON.stringify([{ second: Date.now() + ms - 61_200, requests: 1000, tokens: 0 }])
      control.prepare("DELETE FROM turnchart_circuits WHERE model = 'limited'").run()
      control.prepare("INSERT INTO turnchart_circuits (model, failures, since, admitted, version) VALUES ('limited', 0, ?, ?, 1)").run(Date.now(), admitted)
    },
    failTransitionWrite(turnId, seq) {
      // A persistent (not TEMP) trigger: it fires for the engine's own connection, inside the
      // engine's transaction, and SQLite's error travels back through better-sqlite3 and Kysely.
      const quote = (value: string) => `'${value.replace(/'/g, "''")}'`
      control.exec(
        `CREATE TRIGGER model_fail_${++triggers} BEFORE INSERT ON turnchart_transitions ` +
          `WHEN NEW.turn_id = ${quote(turnId)} AND NEW.seq = ${Number(seq)} AND NEW.event_type <> 'turn.fail' ` +
          `BEGIN SELECT RAISE(ABORT, ${quote(storageFailureMessage)}); END`,
      )
    },
    storedInput(turnId) {
      const row = control.prepare('SELECT input FROM turnchart_turns WHERE id = ?').get(turnId) as { input: string } | undefined
      if (!row) throw new Error(`no turn row for ${turnId}`)
      return JSON.parse(row.input) as TurnInput
    },
    waitFor,
    async close() {
      await engine.close()
      await server.close()
      control.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Assistant parts of a session, all messages flattened, as stored. */
export async function storedAssistantParts(engine: Engine, sessionId: string): Promise<Part[]> {
  const messages = await engine.messages(sessionId)
  return messages.filter((m) => m.info.role === 'assistant').flatMap((m) => m.parts)
}

/**
 * The invariants every finished turn satisfies, whatever happened in it. Returns the
 * violations (empty when all hold) so property tests can report them all at once.
 */
export async function turnInvariantViolations(engine: Engine, sessionId: string, turnId: string): Promise<string[]> {
  const problems: string[] = []
  const parts = await storedAssistantParts(engine, sessionId)
  for (const part of parts) {
    if (part.type === 'tool' && (part.state.status === 'pending' || part.state.status === 'running')) {
      problems.push(`tool part ${part.id} (${part.tool}) left ${part.state.status}`)
    }
    if ((part.type === 'text' || part.type === 'reasoning') && part.time.end === undefined) {
      problems.push(`${part.type} part ${part.id} has no time.end`)
    }
  }
  const status = engine.status(sessionId)
  if (status.type !== 'idle') problems.push(`session status is ${JSON.stringify(status)}, not idle`)
  if (engine.activeTurn(sessionId)) problems.push('the session still has an active turn')
  const turn = await engine.getTurn(turnId)
  if (!turn) problems.push('the turn row is missing')
  else {
    if (!turn.outcome) problems.push(`the turn outcome is not set (state ${turn.state})`)
    else if (turn.state !== turn.outcome) problems.push(`turn state ${turn.state} but outcome ${turn.outcome}`)
  }
  return problems
}
