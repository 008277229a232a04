/**
 * `createRestateService`: turnchart's turns on Restate. A virtual object keyed by session id:
 * `prompt` (exclusive: one turn of a session at a time, Restate queues the next prompt) runs the
 * turn in this process's engine until it ends or waits, as one journaled step; a wait is an
 * awakeable that the shared control handlers (`approve`, `deny`, `resolveCall`, `abort`) resolve
 * once their decision is stored; `steer` (stored for the running turn's next model call, or a
 * turn of its own) and `status` are shared too (an exclusive handler would
 * wait behind the running turn).
 *
 * Why the journal holds the turn's pauses and not each model call: the store is the turn's
 * write-ahead log already (every transition, every part, a tool's start before its effect), and
 * the next attempt resumes from it. A finished step's request is not sent again and a tool does
 * not run again because their rows say they finished; a tool whose start is stored without its
 * result is a call in doubt, as after any crash, never run again silently. Journaling each
 * streamed step in Restate as well would store it twice, and a stream cannot be replayed from a
 * journal entry.
 */
import * as restate from '@restatedev/restate-sdk'
import { HostedTurns, type EngineOptions, type HostedPrompt, type HostedSessionStatus, type HostedTurnResult, type PromptInput, type PromptOptions, type TurnHost } from '../host'
import { terminalErrors, type Refusals } from './terminal-errors'

/** How a Restate-run turn ended, as `prompt` returns it (JSON: it is journaled). */
export type RestateTurnResult = HostedTurnResult
/** A session's status as the object's `status` reads it from the store. */
export type RestateSessionStatus = HostedSessionStatus

/**
 * Restate as turnchart's host: the owner its turns name while they run. Restate runs one
 * invocation at a time per session and retries it after a crash, so the turns hold no lease (no
 * engine's recovery sweep takes them) and each attempt claims the row again from whoever holds
 * it (its epoch bumped): an older attempt still running cannot write.
 */
const restateHost: TurnHost = { owner: 'turnchart:restate' }

/** `createRestateService`'s options: the engine's (`createEngine`'s), and the object's name. */
export type RestateServiceOptions = EngineOptions & {
  /** The virtual object's name in Restate (its ingress path: `/<name>/<sessionId>/prompt`). Default `turnchart`. */
  name?: string
}

/**
 * `prompt`'s input: the prompt's text or content, or `{ input, options }` (the turn's options as
 * `engine.prompt` takes them); or, sent by the object itself, `{ queued }`: a steer no turn took,
 * by id (`steer` sends these), and `{ turn }`: a child turn its parent's `agentTool` call started.
 */
export type RestatePrompt = PromptInput | { input: PromptInput; options?: PromptOptions } | { queued: string } | { turn: string }

/** Which turn a control is for: `turnId` defaults to the session's open turn. */
type OfTurn = { turnId?: string; callId: string }

/** The object's handlers, as Restate's typed clients see them. */
export interface RestateTurnHandlers {
  prompt(ctx: restate.ObjectContext, request: RestatePrompt): Promise<RestateTurnResult>
  approve(ctx: restate.ObjectSharedContext, request: OfTurn & { input?: unknown; by?: string }): Promise<void>
  deny(ctx: restate.ObjectSharedContext, request: OfTurn & { reason?: string; by?: string }): Promise<void>
  resolveCall(ctx: restate.ObjectSharedContext, request: OfTurn & { resolution: unknown }): Promise<void>
  abort(ctx: restate.ObjectSharedContext, request?: { reason?: string }): Promise<void>
  steer(ctx: restate.ObjectSharedContext, request: PromptInput | { input: PromptInput }): Promise<{ id: string }>
  status(ctx: restate.ObjectSharedContext): Promise<RestateSessionStatus>
}

/** The object state key holding the awakeable a waiting turn's invocation waits on. */
const wakeKey = 'wake'
type Wake = { turnId: string; awakeableId: string }

/** The service as its object is made: `createRestateService`'s own value. */
export type RestateService = restate.VirtualObjectDefinition<string, RestateTurnHandlers> & { close(): Promise<void> }

/**
 * The parts of the Restate SDK the object is made with. The SDK ships a CommonJS and an ES module
 * build, and its endpoint knows only its own build's handlers and `TerminalError`: the object must
 * be made with the build the app serves it with (`turnchart/restate`'s `import` passes the ES
 * module, its `require` the CommonJS one).
 */
export type RestateSdk = Pick<typeof restate, 'object' | 'handlers' | 'RestatePromise' | 'TerminalError'>

/** What the handlers share: the object's name, its SDK, this process's turns, refusals made terminal. */
interface Service {
  name: string
  sdk: RestateSdk
  hosted(): Promise<HostedTurns>
  refused: Refusals
}

/**
 * A Restate virtual object running turnchart turns, one object per session (its key is the
 * session id). Bind it to the app's Restate endpoint beside its own services; its engine opens
 * on the first call. Needs Node 22 (the Restate SDK does).
 *
 * @example
 * import * as restate from '@restatedev/restate-sdk'
 * import { createRestateService } from 'turnchart/restate'
 * restate.serve({ services: [createRestateService({ database: './agent.db', model, tools })], port: 9080 })
 */
export function createRestateService(options: RestateServiceOptions): RestateService {
  return createRestateServiceWith(restate, options)
}

/**
 * `createRestateService` with the Restate SDK given: the build of `@restatedev/restate-sdk` the
 * app's endpoint is (its ES module when the app imports it; `turnchart/restate`'s ES module entry
 * passes that one).
 */
export function createRestateServiceWith(sdk: RestateSdk, options: RestateServiceOptions): RestateService {
  const { name = 'turnchart', ...engineOptions } = options
  let opened: Promise<HostedTurns> | undefined
  // (a failed open is not kept: the next call opens again)
  const hosted = () => (opened ??= HostedTurns.open(engineOptions, restateHost).catch((error: unknown) => ((opened = undefined), Promise.reject(error))))
  const service: Service = { name, sdk, hosted, refused: terminalErrors(sdk) }
  const definition = sdk.object({ name, handlers: objectHandlers(service) })
  return Object.assign(definition, { close: async () => (opened ? (await opened).close() : undefined) }) as RestateService
}

/** The object's handlers: `prompt` exclusive, the others shared. */
function objectHandlers(service: Service) {
  const { name, hosted, refused } = service
  const shared = service.sdk.handlers.object.shared
  // Lazy state: a control handler reads the wake its turn's invocation set after the handler began.
  const sharedOptions = { enableLazyState: true }
  return {
    prompt: async (ctx: restate.ObjectContext, request: RestatePrompt) => runTurn(ctx, service, await hosted(), promptOf(request)),
    approve: shared(sharedOptions, async (ctx: restate.ObjectSharedContext, request: OfTurn & { input?: unknown; by?: string }) => {
      await decide(ctx, service, (turns) => turns.approve(ctx.key, request))
    }),
    deny: shared(sharedOptions, async (ctx: restate.ObjectSharedContext, request: OfTurn & { reason?: string; by?: string }) => {
      await decide(ctx, service, (turns) => turns.deny(ctx.key, request))
    }),
    resolveCall: shared(sharedOptions, async (ctx: restate.ObjectSharedContext, request: OfTurn & { resolution: unknown }) => {
      await decide(ctx, service, (turns) => turns.resolveCall(ctx.key, request))
    }),
    abort: shared(sharedOptions, async (ctx: restate.ObjectSharedContext, request?: { reason?: string }) => {
      const turns = await hosted()
      const reason = request?.reason ?? 'aborted through Restate'
      const below = await ctx.run('store the abort', () => refused(() => turns.abort(ctx.key, reason)))
      await wakeTurn(ctx)
      // The turns below it, each waiting in its own session's object: aborted there too.
      for (const sessionId of below) ctx.objectSendClient<RestateTurnHandlers>({ name }, sessionId).abort({ reason: 'the parent turn was aborted' })
    }),
    steer: shared(sharedOptions, async (ctx: restate.ObjectSharedContext, request: PromptInput | { input: PromptInput }) => {
      const turns = await hosted()
      const input = typeof request === 'object' && request !== null && !Array.isArray(request) && 'input' in request ? request.input : request
      const { id, open } = await ctx.run('store the steer', () => refused(() => turns.steer(ctx.key, input)))
      // No turn is open to take it: it becomes the session's next turn (once: its queue row is taken with the turn's insert).
      if (!open) ctx.objectSendClient<RestateTurnHandlers>({ name }, ctx.key).prompt({ queued: id })
      return { id }
    }),
    status: shared(sharedOptions, async (ctx: restate.ObjectSharedContext) => {
      const turns = await hosted()
      return ctx.run('read the status', () => refused(() => turns.status(ctx.key)))
    }),
  }
}

/**
 * The turn of one prompt: its id journaled first (a retry runs the same turn), then run until it
 * ends or waits; a wait is an awakeable a control handler resolves once its decision is stored
 * (raced with a durable timer at the wait's deadline), after which the next step applies the
 * decision, or settles what is past its deadline, and runs on.
 */
async function runTurn(ctx: restate.ObjectContext, service: Service, turns: HostedTurns, prompt: HostedPrompt): Promise<RestateTurnResult> {
  const { name, sdk, refused } = service
  const turnId = namedTurn(prompt) ?? (await ctx.run('new turn', () => refused(() => turns.newTurn(ctx.key, prompt))))
  for (;;) {
    const pause = await ctx.run('run the turn', () => refused(() => turns.runUntilPause(ctx.key, turnId, prompt)))
    if (pause.kind === 'children') {
      // Run trees: each child turn a call to its session's object (its waits, crashes and retries
      // Restate's, as any turn's); the parent, running here, reads how it ended from its row.
      // A child's refusal is the child's: the parent's call reads its row either way.
      await sdk.RestatePromise.allSettled(pause.children.map((child) => ctx.objectClient<RestateTurnHandlers>({ name }, child.sessionId).prompt({ turn: child.turnId })))
      continue
    }
    if (pause.kind === 'ended') {
      ctx.clear(wakeKey)
      // Steers the turn did not take (it ended before another model call): each a turn of its own, after this one.
      for (const id of await ctx.run('steers left', () => turns.steersLeft(ctx.key))) ctx.objectSendClient<RestateTurnHandlers>({ name }, ctx.key).prompt({ queued: id })
      return pause.result
    }
    const wake = ctx.awakeable<void>()
    ctx.set<Wake>(wakeKey, { turnId, awakeableId: wake.id })
    // The wake is in the object's state once an entry after it is acknowledged: a control stored
    // after this point finds it; one stored before is pending in the store, found next.
    await ctx.run('wake set', () => true)
    if (!(await ctx.run('look for a control', () => turns.hasPendingControl(turnId)))) await wakeOrDeadline(ctx, sdk, wake.promise, pause.deadline)
    ctx.clear(wakeKey)
  }
}

/** Waits for `wake`, or until `deadline` on a durable timer (it outlives a restart of the service and of Restate). */
async function wakeOrDeadline(ctx: restate.ObjectContext, sdk: RestateSdk, wake: restate.RestatePromise<void>, deadline: number | undefined): Promise<void> {
  if (deadline === undefined) return wake
  const now = await ctx.date.now()
  await sdk.RestatePromise.race([wake, ctx.sleep(Math.max(0, deadline - now), 'deadline')])
}

/** A decision on a call stored (journaled: once), then the turn's invocation woken. */
async function decide(ctx: restate.ObjectSharedContext, service: Service, store: (turns: HostedTurns) => Promise<void>): Promise<void> {
  const turns = await service.hosted()
  await ctx.run('store the decision', () => service.refused(() => store(turns)))
  await wakeTurn(ctx)
}

/** Resolves the awakeable the session's waiting invocation waits on, if it waits. */
async function wakeTurn(ctx: restate.ObjectSharedContext): Promise<void> {
  const wake = await ctx.get<Wake>(wakeKey)
  if (wake) ctx.resolveAwakeable(wake.awakeableId)
}

/** The id of the turn a prompt runs when it names one (a queued steer's, a child turn's). */
function namedTurn(prompt: HostedPrompt): string | undefined {
  return 'queued' in prompt ? prompt.queued : 'turn' in prompt ? prompt.turn : undefined
}

/** `prompt`'s input as the engine takes it. */
function promptOf(request: RestatePrompt): HostedPrompt {
  if (typeof request === 'object' && request !== null && !Array.isArray(request) && ('input' in request || 'queued' in request || 'turn' in request)) return request
  return { input: request as PromptInput }
}
