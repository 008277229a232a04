/**
 * The row planner (src/turn/turn-log/row-plan.ts) on its own, without a database: what a
 * transition writes is a pure function of the transitions and the turn's facts. The turn log
 * and recovery write what it plans (log-rows.ts `writePlan`); the scenarios show the rows they
 * land as.
 */
import { planRows, planUnreplayable, type LoggedTransition } from '../../src/turn/turn-log/row-plan'
import { StorageError } from '../../src/core/errors'

const context = (step: number, attempt = 1, retryDelayMs = 0) => ({ step, attempt, retryDelayMs })
const time = 1_700_000_000_000

test('rows follow the last committed one: numbered after it, each leaving the state the one before entered', () => {
  const transitions: LoggedTransition[] = [
    { event: { type: 'tools.finished' }, to: 'step-gate', context: context(2) },
    { event: { type: 'gate.continue' }, to: 'streaming', context: context(3) },
  ]
  const plan = planRows({ turnId: 't', after: { state: 'tool-running', seq: 7 }, time, parts: ['p1', 'p2'] }, transitions)
  expect(plan.rows).toEqual([
    { turnId: 't', seq: 8, from: 'tool-running', event: 'tools.finished', to: 'step-gate', payload: {}, time },
    // (the parts touched since the last row ride with the last one)
    { turnId: 't', seq: 9, from: 'step-gate', event: 'gate.continue', to: 'streaming', payload: {}, time, parts: ['p1', 'p2'] },
  ])
  expect(plan.turn).toEqual({ state: 'streaming', outcome: null, step: 3, attempt: 1, retryAt: null, error: null })
  expect(plan.time).toBe(time)
})

test("an event's payload is control data: its type left out, an error serialised, redacted, an undefined output dropped", () => {
  const error = new StorageError('writing parts', new Error('password=hunter2'))
  const plan = planRows(
    { turnId: 't', after: { state: 'streaming', seq: 1 }, time, redact: (payload) => JSON.parse(JSON.stringify(payload).replace(/hunter2/g, '***')) },
    [{ event: { type: 'turn.fail', error, output: undefined } as { type: string }, to: 'failed', context: context(1) }],
  )
  const payload = plan.rows[0].payload as { error: { name: string; message: string } }
  expect(Object.keys(payload)).toEqual(['error'])
  expect(payload.error.name).toBe('StorageError')
  expect(JSON.stringify(payload)).not.toContain('hunter2')
})

test('the deadline a row stores: a retry wait its delay from now, a waiting state what it waits on, interrupted the one it held, others none', () => {
  const after = { state: 'streaming', seq: 3 }
  const retry = planRows({ turnId: 't', after, time, waitDeadline: 99 }, [{ event: { type: 'step.failed' }, to: 'retry-waiting', context: context(1, 1, 2_000) }])
  expect(retry.turn.retryAt).toBe(time + 2_000)
  const waiting = planRows({ turnId: 't', after, time, waitDeadline: time + 300 }, [{ event: { type: 'step.finished' }, to: 'awaiting-approval', context: context(1) }])
  expect(waiting.turn.retryAt).toBe(time + 300)
  const noDeadline = planRows({ turnId: 't', after, time }, [{ event: { type: 'step.finished' }, to: 'awaiting-approval', context: context(1) }])
  expect(noDeadline.turn.retryAt).toBeNull()
  const crashed = planRows({ turnId: 't', after: { state: 'retry-waiting', seq: 4 }, time, storedDeadline: time - 5 }, [{ event: { type: 'turn.crashed' }, to: 'interrupted', context: context(1) }])
  expect([crashed.turn.state, crashed.turn.retryAt, crashed.rows[0].from]).toEqual(['interrupted', time - 5, 'retry-waiting'])
  const working = planRows({ turnId: 't', after, time, waitDeadline: 99, storedDeadline: 98 }, [{ event: { type: 'step.finished' }, to: 'tool-running', context: context(1) }])
  expect(working.turn.retryAt).toBeNull()
})

test('a final row ends the turn: its outcome, and its error only when it did not complete', () => {
  const error = { name: 'MessageAbortedError', message: 'aborted' }
  const aborted = planRows({ turnId: 't', after: { state: 'streaming', seq: 2 }, time, error }, [{ event: { type: 'turn.abort' }, to: 'aborted', context: context(1) }])
  expect(aborted.turn).toMatchObject({ state: 'aborted', outcome: 'aborted', error })
  const completed = planRows({ turnId: 't', after: { state: 'streaming', seq: 2 }, time, error: null }, [{ event: { type: 'step.finished' }, to: 'completed', context: context(1) }])
  expect(completed.turn).toMatchObject({ state: 'completed', outcome: 'completed', error: null })
  // a row that is not final carries no error, whatever the facts say
  const open = planRows({ turnId: 't', after: { state: 'step-gate', seq: 2 }, time, error }, [{ event: { type: 'gate.continue' }, to: 'streaming', context: context(2) }])
  expect(open.turn).toMatchObject({ outcome: null, error: null })
})

test("an unreplayable turn's plan fails its row and adds no log row", () => {
  const error = { name: 'ReplayMismatchError', message: 'a gap' }
  expect(planUnreplayable({ id: 't', step: 2, attempt: 1 }, error, time)).toEqual({
    turnId: 't',
    rows: [],
    turn: { state: 'failed', outcome: 'failed', step: 2, attempt: 1, retryAt: null, error },
    time,
  })
})

test('nothing to plan is a defect', () => {
  expect(() => planRows({ turnId: 't', after: { state: 'idle', seq: 0 }, time }, [])).toThrow(/no transition/)
})
