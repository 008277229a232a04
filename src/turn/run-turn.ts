/**
 * The turn runner: one turn's parts built in order, each from the ones before it. The scope
 * (the turn's data and storage lane) → the log (its writer, the write-ahead gate, where its end
 * is decided) → the chart with its gated actors → the actor → the handle; then the outcomes are
 * wired back: a failed write fails the chart, the log's end settles the handle. A turn starts
 * the same way from a prompt, from recovery, or from a parent turn's tool: only `begin` differs
 * (see turn-starts.ts).
 */
import { createActor, type Actor, type InspectionEvent, type SnapshotFrom } from 'xstate'
import type { TurnMachine } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import type { Bus, TurnchartEvent } from '../core/bus'
import type { Usage } from '../core/types'
import type { Store } from '../store/store'
import type { OutagePolicy } from '../store/outage'
import type { ChildTurnRunner } from '../tools/child-turns'
import type { CallPorts } from '../tools/call-info'
import { HandoffPoint } from './handoff-point'
import { RunTree } from './run-tree/run-tree'
import type { RunTrees } from './run-tree/run-trees'
import { TurnLog, transitionsTo, type FirstRowWriter } from './turn-log/turn-log'
import type { EngineChart } from './turn-actors'
import { TurnHandle, type RunningTurn, type UIMessageStreamOfTurn } from './turn-handle'
import type { TurnScope } from './turn-scope'

/** XState's clock (setTimeout/clearTimeout), e.g. a `SimulatedClock`. */
export type TurnClock = NonNullable<Parameters<typeof createActor>[1]>['clock']

/** What every turn of an engine shares. */
export interface TurnDeps {
  store: Store
  bus: Pick<Bus, 'publish'>
  /** This engine's owner id (`host:pid:random`, or its host's: `TurnHost.owner`), written on the turns it runs. */
  owner: string
  /** How long a claim on a turn holds (the lease written with its row); null: no lease (Restate serializes the session's turns). */
  leaseMs: number | null
  /** Streamed text is written at most this often. */
  flushIntervalMs: number
  /** How a turn's writes ride out a database outage. */
  outage?: OutagePolicy
  /** The chart input every turn gets from the engine's options. */
  chart: Pick<TurnInput, 'autoCompact' | 'maxCompactions'>
  /** The turn chart with this engine's actors, and the turns they act for. */
  engineChart: EngineChart
  /** The app's inspector (Stately), given every inspection event of every turn. */
  inspect?: (event: InspectionEvent) => void
  clock?: TurnClock
  /** Told when the turn's actor errs (a defect: the chart's actors never reject). */
  onActorError(error: unknown): void
  /** Called once when the turn has settled (after its last write), successfully or not. */
  onSettled(turn: RunningTurn): void
  /**
   * Run trees: the runner a turn's `agentTool` calls start child turns through, bound to the
   * turn; given these deps (a child turn runs with its parent's), so they need not refer to themselves.
   */
  children?(parent: ParentTurn, turns: TurnDeps): TurnChildren
  /** Run trees: the trees this engine runs turns of (a recovered child finds its root's here). */
  trees?: RunTrees
  /** The engine's schedules, as a tool call stores one (`scheduleTool`); absent when its store keeps none. */
  schedule?: CallPorts['schedule']
  /** Resolves once the steers this engine is storing for the session are stored (read at each step gate). */
  steersStored?(sessionId: string): Promise<void>
  /** A turn's UI message stream (`turn.toUIMessageStreamResponse()`), from the layer above that builds it. */
  uiMessageStream?: UIMessageStreamOfTurn
}

/** Run trees: a turn as the child turns its tools start see it. */
export interface ParentTurn {
  turnId: string
  sessionId: string
  tree: RunTree
  /** True once the turn leaves this engine without ending (closed, or lost to another engine): its children go on. */
  leaving(): boolean
  /** Publishes an event of this turn (a child's progress). */
  publish(event: TurnchartEvent): void
}

/** The child turn runner of one turn, and its children's usage when the turn ends. */
export interface TurnChildren extends ChildTurnRunner {
  /** The usages of the turn's descendants, or undefined when it started no child. */
  descendantUsages(): Promise<Usage[] | undefined>
}

type TurnSnapshot = SnapshotFrom<TurnMachine>

/** Where a turn's actor starts: a new prompt, a turn restored from the database, a child turn. */
export interface TurnStart {
  scope: TurnScope
  input: TurnInput
  /** Restored snapshot (recovery) and the seq of the last logged transition. */
  restored?: { snapshot: TurnSnapshot; seq: number }
  /** Run trees: the tree the turn belongs to (a child's parent's, a recovered turn's); absent: the turn is a new tree's root. */
  tree?: RunTree
  /**
   * Runs once the actor started: stores the prompt (or does nothing for a restored turn).
   * Resolves with the event to send then (`turn.start`, `turn.recover`), or null; rejects when
   * the turn cannot start (nothing was written). `firstRow(event)` sends `event` inside the
   * prompt's transaction and writes the row it records there (`TurnLog.writeFirstRowIn`: the
   * model call then waits for no commit of its own); `begin` then resolves with null.
   */
  begin(actor: Actor<TurnMachine>, firstRow: (event: TurnEvent) => FirstRowWriter): Promise<TurnEvent | null>
}

/**
 * Runs a turn: its actor exists at once (in `idle`, or where it was restored).
 *
 * @example
 * const turn = runTurn(deps, { scope, input, begin: async () => ({ type: 'turn.start' }) })
 * const { outcome } = await turn.done
 */
export function runTurn(deps: TurnDeps, start: TurnStart): RunningTurn {
  const { scope } = start
  // Run trees: a new root's budget is its own configuration's, read once it is resolved; its
  // spending is every engine's when the store keeps it.
  const spending = deps.store.spending
  const tree =
    start.tree ??
    new RunTree({
      rootTurnId: scope.turnId,
      startedAt: Date.now(),
      budget: () => (scope.ready ? scope.config.budget : undefined),
      ...(spending ? { stored: () => scope.outages.through("reading the run tree's spending", () => spending.get(scope.turnId)) } : {}),
    })
  // The tree's spending rides in the transactions of the turn's rows (no commit of its own).
  const log = new TurnLog({ scope, bus: scope.events, fence: scope.fence, ...(start.restored ? { restored: start.restored } : {}), rider: () => tree.rider() })
  void scope.writer.failed.then((error) => log.writeFailed(error))
  deps.trees?.join(tree)
  const children = deps.children?.({ turnId: scope.turnId, sessionId: scope.sessionId, tree, leaving: () => log.leaving, publish: (event) => scope.events.publish(event) }, deps)
  const record = transitionsTo(log)
  const appInspector = deps.inspect ? tree.inspection.inspectorFor(deps.inspect, scope.parentTurnId) : undefined
  const handoff = new HandoffPoint()
  // Bound before the actor exists (a restored one invokes at once), released once it stopped.
  const calls = { ...(children ? { childTurns: children } : {}), ...(deps.schedule ? { schedule: deps.schedule } : {}) }
  const release = deps.engineChart.bind({ scope, tree, handoff, calls }, log)
  const actor = createActor(deps.engineChart.machine, {
    input: start.input,
    ...(start.restored ? { snapshot: start.restored.snapshot } : {}),
    ...(deps.clock ? { clock: deps.clock } : {}),
    // The log hears each transition here; the app's inspector (given at creation: it must see
    // the root actor's own `@xstate.actor` event) after it.
    inspect: appInspector
      ? (event) => {
          record(event)
          appInspector(event)
        }
      : record,
  })
  if (deps.inspect) tree.inspection.add(scope.turnId, tree.inspection.actorOf(actor, scope.parentTurnId))
  // An actor error is a defect in turnchart; observe it so it cannot crash the process.
  actor.subscribe({ error: (error) => deps.onActorError(error) })
  const handle = new TurnHandle({
    actor,
    scope,
    log,
    handoff,
    onSettled: (turn) => {
      release()
      tree.inspection.delete(turn.id)
      deps.trees?.leave(tree)
      deps.onSettled(turn)
    },
    ...(children ? { descendantUsages: () => children.descendantUsages() } : {}),
    ...(deps.uiMessageStream ? { uiMessageStream: deps.uiMessageStream } : {}),
    outageMs: deps.outage?.outageMs ?? 0,
  })

  void log.failed.then((error) => actor.send({ type: 'turn.fail', error }))

  actor.start()
  // (an abort that came first leaves nothing to send, nor to write ahead)
  const firstRow = (event: TurnEvent): FirstRowWriter => (transaction) => log.writeFirstRowIn(transaction, () => actor.getSnapshot().status === 'active' && actor.send(event))
  start.begin(actor, firstRow).then(
    (event) => {
      handle.started()
      if (event) actor.send(event)
    },
    (error: unknown) => handle.notStarted(error),
  )
  return handle
}
