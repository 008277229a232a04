/**
 * The run tree a turn resumed here joins: the one this engine holds for its root, or one that
 * loads the root's budget and what the tree spent so far from the stored rows (once). Its reads
 * ride a database outage out as a turn's own do (`storage.outageMs`): a turn resumed just as
 * the database dropped its connections waits for it instead of failing at its step gate.
 */
import { turnUsages } from '../conversation/history'
import type { TurnRecord } from '../core/types'
import { OutageRetry } from '../store/outage'
import type { Store } from '../store/store'
import { RunTree, type TreeLoad } from '../turn/run-tree/run-tree'
import type { TurnDeps } from '../turn/run-turn'

/**
 * The tree a turn resumed here belongs to: the one this engine holds for its root, or one that
 * loads the root's budget and what the tree spent so far from the stored rows (once).
 *
 * @example
 * const tree = treeOf(turns, record)
 */
export function treeOf(turns: Pick<TurnDeps, 'store' | 'trees' | 'outage'>, record: TurnRecord): RunTree {
  const rootTurnId = record.rootTurnId ?? record.id
  const spending = turns.store.spending
  const through = <T>(operation: string, read: () => Promise<T>) => new OutageRetry(turns.outage ?? { outageMs: 0 }).run(operation, read)
  return (
    turns.trees?.get(rootTurnId) ??
    new RunTree({
      rootTurnId,
      startedAt: record.time.created,
      load: () => through('loading the run tree', () => loadTree(turns.store, rootTurnId)),
      ...(spending ? { stored: () => through("reading the run tree's spending", () => spending.get(rootTurnId)) } : {}),
    })
  )
}

async function loadTree(store: Store, rootTurnId: string): Promise<TreeLoad> {
  const root = await store.turns.get(rootTurnId)
  const usages = await store.turns.usages(root?.sessionId ?? '')
  const tree = [...usages.filter((u) => u.id === rootTurnId).map((u) => ({ ...u, step: root?.step ?? 0 })), ...(await store.turns.descendants([rootTurnId]))]
  const byTurn = await turnUsages(store, tree)
  const spent = { tokens: { input: 0, output: 0 }, cost: 0, steps: 0 }
  for (const t of tree) {
    const usage = byTurn.get(t.id)!
    spent.tokens.input += usage.tokens.input
    spent.tokens.output += usage.tokens.output
    spent.cost += usage.cost
    spent.steps += t.step
  }
  return { budget: root?.options?.budget, startedAt: root?.time.created ?? Date.now(), spent }
}
