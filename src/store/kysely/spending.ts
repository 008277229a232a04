/** Run trees' spending on Kysely: one row per tree, added to in the writing transaction (an upsert). */
import { sql } from 'kysely'
import type { SpendingStore, TreeSpent } from '../store'
import { num, type Executor } from './rows'

export class KyselySpending implements SpendingStore {
  constructor(private readonly db: Executor) {}

  async get(rootTurnId: string): Promise<TreeSpent | undefined> {
    const row = await this.db.selectFrom('turnchart_tree_spending').selectAll().where('root_turn_id', '=', rootTurnId).executeTakeFirst()
    return row && { tokens: { input: num(row.input_tokens), output: num(row.output_tokens) }, cost: Number(row.cost), steps: num(row.steps) }
  }

  async add(rootTurnId: string, delta: TreeSpent, now: number, maxSteps?: number): Promise<boolean> {
    if (maxSteps !== undefined && delta.steps > maxSteps) return false
    // One statement on both dialects: the row is made by the first add, summed into after (the
    // row lock orders two engines' adds on PostgreSQL, and the condition is judged on the row
    // the lock gave: the second of two adds at the same moment sees the first's steps).
    const result = await this.db
      .insertInto('turnchart_tree_spending')
      .values({ root_turn_id: rootTurnId, input_tokens: delta.tokens.input, output_tokens: delta.tokens.output, cost: delta.cost, steps: delta.steps, updated_at: now })
      .onConflict((oc) => {
        const update = oc.column('root_turn_id').doUpdateSet({
          input_tokens: sql`turnchart_tree_spending.input_tokens + excluded.input_tokens`,
          output_tokens: sql`turnchart_tree_spending.output_tokens + excluded.output_tokens`,
          cost: sql`turnchart_tree_spending.cost + excluded.cost`,
          steps: sql`turnchart_tree_spending.steps + excluded.steps`,
          updated_at: now,
        })
        return maxSteps === undefined ? update : update.where(sql<number>`turnchart_tree_spending.steps + excluded.steps`, '<=', maxSteps)
      })
      .executeTakeFirst()
    return Number(result.numInsertedOrUpdatedRows ?? 1n) > 0
  }
}
