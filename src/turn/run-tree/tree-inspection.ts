/**
 * Run trees in the Stately inspector. A child turn is the root actor of its own XState system (a
 * turn runs, recovers and is fenced alone), so XState gives it no parent and the inspector would
 * list it as one more top-level actor. The inspector draws actors under the actor named by
 * `actorRef._parent`, grouped by `rootId`: a child turn's inspection events are handed to the
 * app's inspector with its root actor presented under its parent turn's actor, and every event of
 * its system under the tree's root. The actors themselves are untouched.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate'

/** How a turn's actor is known to the inspector. */
export interface InspectedActor {
  sessionId: string
  rootId: string
}

/** The inspected actors of a tree's turns running in this engine, by turn id. */
export class TreeInspection {
  readonly #actors = new Map<string, InspectedActor>()

  /** The turn's actor as the inspector knows it (its `rootId` is the tree's when it has a parent here). */
  add(turnId: string, actor: InspectedActor): void {
    this.#actors.set(turnId, actor)
  }

  delete(turnId: string): void {
    this.#actors.delete(turnId)
  }

  /**
   * The inspector a child turn's actor is given: the app's, with the child shown under its
   * parent's actor. The parent's actor runs in this engine when the child starts from its tool
   * call; a child resumed before its parent (recovery) or on another engine is shown on its own.
   */
  inspectorFor(inspect: (event: InspectionEvent) => void, parentTurnId: string | undefined): (event: InspectionEvent) => void {
    const parent = parentTurnId ? this.#actors.get(parentTurnId) : undefined
    return parent ? underParent(inspect, parent) : inspect
  }

  /** The `InspectedActor` of an actor created with `inspectorFor(…, parentTurnId)`. */
  actorOf(actor: AnyActorRef, parentTurnId: string | undefined): InspectedActor {
    const parent = parentTurnId ? this.#actors.get(parentTurnId) : undefined
    return { sessionId: actor.sessionId, rootId: parent?.rootId ?? actor.sessionId }
  }
}

function underParent(inspect: (event: InspectionEvent) => void, parent: InspectedActor): (event: InspectionEvent) => void {
  const parentRef = { sessionId: parent.sessionId }
  return (event) => {
    const actorRef = event.actorRef as AnyActorRef & { _parent?: unknown }
    // Only the child system's root has no parent; its own children keep theirs.
    const shown = actorRef._parent === undefined ? { ...event, actorRef: presentedWithParent(actorRef, parentRef) } : event
    inspect({ ...shown, rootId: parent.rootId } as InspectionEvent)
  }
}

/** The actor as the inspector reads it, with `_parent` answered by the parent turn's actor (everything else is the actor's own). */
function presentedWithParent(actor: AnyActorRef, parentRef: { sessionId: string }): AnyActorRef {
  return new Proxy(actor, {
    get: (target, key) => (key === '_parent' ? parentRef : Reflect.get(target, key, target)),
  })
}
