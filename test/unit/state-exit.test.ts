import { StateExit } from '../../src/core/state-exit'

test('leaving tells each listener once, in order, with the reason; a removed listener is not told', () => {
  const exit = new StateExit()
  const heard: string[] = []
  exit.onLeave((reason) => heard.push(`a:${String(reason)}`))
  const removeB = exit.onLeave(() => heard.push('b'))
  exit.onLeave((reason) => heard.push(`c:${String(reason)}`))
  removeB()
  expect(exit.left).toBe(false)
  exit.leave('stop')
  exit.leave('again')
  expect(heard).toEqual(['a:stop', 'c:stop'])
  expect(exit).toMatchObject({ left: true, reason: 'stop' })
})

test('a listener added after the state was left is told at once; its signal, read before or after, is aborted with the reason', () => {
  const before = new StateExit()
  const early = before.signal
  before.leave('gone')
  expect(early.aborted).toBe(true)
  expect(early.reason).toBe('gone')

  const after = new StateExit()
  after.leave('late')
  const heard: unknown[] = []
  after.onLeave((reason) => heard.push(reason))
  expect(heard).toEqual(['late'])
  expect(after.signal.aborted).toBe(true)
  expect(after.signal.reason).toBe('late')
})
