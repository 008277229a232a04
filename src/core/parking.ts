/**
 * The owner a parked turn's row names: no engine. A parked turn waits in a parkable state
 * (a waiting state whose `meta.wait` says it parks) with no lease (`leaseUntil` null), so the recovery sweep does
 * not claim it and `turnchart recover` does not end it; the control that settles it claims it
 * from this owner (`TurnStore.claim`, expecting `parkedOwner`) and resumes it.
 */
export const parkedOwner = 'turnchart:parked'
