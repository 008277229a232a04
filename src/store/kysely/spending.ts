/** Run trees' spending on Kysely: one row per tree, added to in the writing transaction (an upsert). */
import { sql, type Kysely } from 'kysely'
import { precompiledQuery } from '../precompiled-query'
import type { TurnchartDatabase } from '../schema'
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
    const values = { root_turn_id: rootTurnId, input_tokens: delta.tokens.input, output_tokens: delta.tokens.output, cost: delta.cost, steps: delta.steps, updated_at: now }
    const query = maxSteps === undefined ? addQuery : addWithinQuery
    const result = await query.execute(this.db as Kysely<TurnchartDatabase>, { ...values, max_steps: maxSteps ?? null })
    return Number(result.numAffectedRows ?? 1n) > 0
  }
}

const addedColumns = ['root_turn_id', 'input_tokens', 'output_tokens', 'cost', 'steps', 'updated_at'] as const
type SpendingValue = (typeof addedColumns)[number] | 'max_steps'

/**
 * One statement on both dialects, written with every row a turn writes (precompiled): the row is
 * made by the first add, summed into after (the row lock orders two engines' adds on
 * PostgreSQL, and the condition is judged on the row the lock gave: the second of two adds at
 * the same moment sees the first's steps). `within`: only while the steps stay at most `max_steps`.
 */
function addSpendingQuery(within: boolean) {
  const names: readonly SpendingValue[] = within ? [...addedColumns, 'max_steps'] : addedColumns
  return precompiledQuery<SpendingValue>(names, (db, v) =>
    db
      .insertInto('turnchart_tree_spending')
      .values({
        root_turn_id: v.root_turn_id as string,
        input_tokens: v.input_tokens as number,
        output_tokens: v.output_tokens as number,
        cost: v.cost as number,
        steps: v.steps as number,
        updated_at: v.updated_at as number,
      })
      .onConflict((oc) => {
        const update = oc.column('root_turn_id').doUpdateSet({
          input_tokens: sql`turnchart_tree_spending.input_tokens + excluded.input_tokens`,
          output_tokens: sql`turnchart_tree_spending.output_tokens + excluded.output_tokens`,
          cost: sql`turnchart_tree_spending.cost + excluded.cost`,
          steps: sql`turnchart_tree_spending.steps + excluded.steps`,
          updated_at: sql`excluded.updated_at`,
        })
        return within ? update.where(sql<number>`turnchart_tree_spending.steps + excluded.steps`, '<=', v.max_steps as number) : update
      }),
  )
}

const addQuery = addSpendingQuery(false)
const addWithinQuery = addSpendingQuery(true)
