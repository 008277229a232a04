/** Run trees' spending in memory: one row per tree, made by the first add, summed into after. */
import type { SpendingStore, TreeSpent } from '../store'
import type { Access } from './access'
import { foreignKeyViolation } from './tables'

export class MemorySpending implements SpendingStore {
  constructor(private readonly db: Access) {}

  get(rootTurnId: string): Promise<TreeSpent | undefined> {
    return this.db.run((t) => {
      const row = t.spending.get(rootTurnId)
      return row && { tokens: { input: row.input, output: row.output }, cost: row.cost, steps: row.steps }
    })
  }

  add(rootTurnId: string, delta: TreeSpent, now: number, maxSteps?: number): Promise<boolean> {
    return this.db.run((t) => {
      if (!t.turns.has(rootTurnId)) throw foreignKeyViolation('turnchart_tree_spending', 'root_turn_id', rootTurnId)
      const row = t.spending.get(rootTurnId)
      if (maxSteps !== undefined && (row?.steps ?? 0) + delta.steps > maxSteps) return false
      t.put('spending', rootTurnId, {
        rootTurnId,
        input: (row?.input ?? 0) + delta.tokens.input,
        output: (row?.output ?? 0) + delta.tokens.output,
        cost: (row?.cost ?? 0) + delta.cost,
        steps: (row?.steps ?? 0) + delta.steps,
        updated: now,
      })
      return true
    })
  }
}
