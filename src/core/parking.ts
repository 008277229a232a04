/**
 * The owner a parked turn's row names: no engine. A parked turn waits in a parkable state
 * (a waiting state whose `meta.wait` says it parks) with no lease (`leaseUntil` null), so the recovery sweep does
 * not claim it and `turnchart recover` does not end it; the control that settles it claims it
 * from this owner (`TurnStore.claim`, expecting `parkedOwner`) and resumes it.
 */
export const parkedOwner = 'turnchart:parked'

/** When a claim taken now runs out: `leaseMs` from `now`, or never (null) for a turn whose host serializes its runs. */
export function leaseEnd(leaseMs: number | null, now: number): number | null {
  return leaseMs === null ? null : now + leaseMs
}
