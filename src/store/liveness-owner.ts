/**
 * The mark on an engine's owner id that says the database keeps its liveness (PostgreSQL:
 * postgres/liveness.ts): recovery reads such an owner's liveness from the server instead of
 * waiting for its leases. An owner id without it (an engine of a version before it, one whose
 * listener could not connect, SQLite) is waited for as before.
 */

/** The owner id of an engine whose liveness the server keeps: its id, marked. */
export function livenessOwner(owner: string): string {
  return `${owner}:live`
}

/** Whether an owner id says its engine holds its liveness on the server. */
export function holdsLiveness(owner: string): boolean {
  return owner.endsWith(':live')
}
