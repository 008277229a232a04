/**
 * What the postgres project runs when no PostgreSQL server answers (jest.config.js): one test per
 * suite it would have run, skipped with the reason, so that the run's summary counts them as
 * skipped instead of leaving them out; under CI=true each fails (CI always has PostgreSQL).
 */
import { itPostgres } from './requires'

const absent = (globalThis as { TURNCHART_PG_ABSENT?: { address: string; suites: string[] } }).TURNCHART_PG_ABSENT

describe.each((absent?.suites ?? []).map((suite) => [suite]))('%s on PostgreSQL', () => {
  itPostgres('runs its tests on PostgreSQL', () => {})
})
