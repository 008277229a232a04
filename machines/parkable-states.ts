/**
 * The chart's states where a turn waits on a person or the world with nothing of its own in
 * flight: no model request, no tool, no timer the chart needs. A turn in one of them may be
 * parked (src/engine/parked-turns.ts): its engine lets go of its actor, lease and timers, and the
 * control that settles the wait resumes it on whichever engine takes it. The one list: the
 * engine, recovery and the viewer read it (no XState here: the viewer's page imports it).
 */
export const parkableStates: ReadonlySet<string> = new Set(['awaiting-approval', 'call-in-doubt', 'awaiting-deferred'])
