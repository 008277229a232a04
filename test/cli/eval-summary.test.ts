/**
 * The eval summary counts each case as its row says it (issue 74): a case that could not be
 * scored is an error, not a failure; a skipped case is skipped.
 */
import { formatTable, htmlReport } from '../../src/cli/eval-report'
import type { CaseResult, SuiteResult } from '../../src/testing'

const row = (name: string, status: CaseResult['status']): CaseResult => ({
  name,
  turnId: `trn_${name}`,
  status,
  scores: status === 'passed' ? [{ scorer: 'includes', pass: true, reason: 'found' }] : status === 'failed' ? [{ scorer: 'includes', pass: false, reason: 'missing' }] : [],
  ...(status === 'error' ? { error: 'the re-run diverged from the recording: the system prompt differs' } : status === 'skipped' ? { error: 'the token budget was spent' } : {}),
  usage: { inputTokens: 0, outputTokens: 0 },
  durationMs: 1,
})

const result: SuiteResult = {
  suite: 'mixed',
  runId: 'run',
  startedAt: new Date(0).toISOString(),
  cases: [row('a', 'passed'), row('b', 'passed'), row('c', 'failed'), row('d', 'error'), row('e', 'skipped')],
  passed: 2,
  failed: 1,
  errors: 1,
  skipped: 1,
  score: 2 / 3,
  usage: { inputTokens: 0, outputTokens: 0 },
}

test('the table and the HTML report say 1 failed, 1 error and 1 skipped, as the rows do', () => {
  const table = formatTable(result)
  expect(table).toMatch(/^error +d /m)
  expect(table).toContain('mixed: 2 passed, 1 failed, 1 error, 1 skipped of 5;')
  expect(htmlReport(result)).toContain('2 passed, 1 failed, 1 error, 1 skipped of 5;')
})
