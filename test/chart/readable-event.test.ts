/** The CLI's readable event names: every event the chart can log reads without XState's internals. */
import { chartEdges } from '../../src/chart/chart-edges'
import { readableEvent } from '../../src/chart/readable-event'

test('the retry timers read as "retry timer"; the chart\'s own events stay as they are', () => {
  expect(readableEvent('xstate.after.retryDelay.turn.running.step.retry-waiting')).toBe('retry timer')
  expect(readableEvent('xstate.after.retryDelay.turn.running.compaction.compaction-retry-waiting')).toBe('retry timer')
  expect(readableEvent('xstate.done.actor.runTools')).toBe('runTools done')
  expect(readableEvent('xstate.error.actor.runTools')).toBe('runTools failed')
  expect(readableEvent('step.finished')).toBe('step.finished')
  expect(readableEvent('turn.abort')).toBe('turn.abort')
})

test('no event of the chart reads with an xstate. prefix', () => {
  const events = [...new Set(chartEdges().map((edge) => edge.event).filter(Boolean))]
  expect(events.some((event) => event.startsWith('xstate.'))).toBe(true)
  expect(events.map(readableEvent).filter((name) => name.includes('xstate.'))).toEqual([])
})
