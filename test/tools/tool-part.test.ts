/**
 * The life of a tool part: each change, and one message per reason a call did not run.
 */
import { approveCall, completeCall, denyCall, failCall, notRunMessage, requireApproval, runCall, stopCall } from '../../src/tools/tool-part'
import type { ToolPart } from '../../src/core/types'

const call = (): ToolPart => ({ id: 'prt_1', sessionId: 'ses_1', messageId: 'msg_1', type: 'tool', callId: 'call_1', tool: 'read', state: { status: 'pending', input: {} } })

test.each([
  [{ kind: 'turn-failed', errorName: 'StorageError' }, 'Tool not run: the turn failed (StorageError)'],
  [{ kind: 'turn-failed' }, 'Tool not run: the turn failed'],
  [{ kind: 'aborted' }, 'Tool execution aborted'],
  [{ kind: 'restart' }, 'interrupted by a restart'],
  [{ kind: 'attempt-failed' }, 'The tool did not run: the model request failed and the step was retried or ended'],
] as const)('not run because %j: "%s"', (reason, message) => {
  expect(notRunMessage(reason)).toBe(message)
})

test('pending → running → completed keeps the start time', () => {
  const part = call()
  expect(runCall(part, { path: '.' }, 10)).toBe(true)
  expect(runCall(part, { path: 'again' }, 11)).toBe(false) // only a pending call moves
  completeCall(part, ['a'], 20)
  expect(part.state).toEqual({ status: 'completed', input: { path: '.' }, output: ['a'], time: { start: 10, end: 20 } })
})

test('approval: required, then approved (running) or denied (an error the model sees)', () => {
  const approved = call()
  requireApproval(approved)
  expect(approved.state).toEqual({ status: 'pending', input: {}, approval: 'required' })
  approveCall(approved, 5)
  expect(approved.state).toEqual({ status: 'running', input: {}, time: { start: 5 } })
  const denied = call()
  requireApproval(denied)
  denyCall(denied, 'not on a Friday', 7)
  expect(denied.state).toEqual({ status: 'error', input: {}, error: 'the user denied this tool call: not on a Friday', metadata: { denied: true, reason: 'not on a Friday' }, time: { start: 7, end: 7 } })
})

test('a failed call keeps its start; an invalid input is stored as given', () => {
  const part = call()
  runCall(part, { n: 1 }, 3)
  failCall(part, 'boom', 9)
  expect(part.state).toEqual({ status: 'error', input: { n: 1 }, error: 'boom', time: { start: 3, end: 9 } })
  const invalid = call()
  failCall(invalid, 'invalid input', 4, '{"broken"')
  expect(invalid.state).toMatchObject({ status: 'error', input: '{"broken"', time: { start: 4, end: 4 } })
})

test('stopCall closes an open call once; the same close written again takes the new reason', () => {
  const part = call()
  runCall(part, {}, 1)
  expect(stopCall(part, { kind: 'aborted' }, 8)).toBe(true)
  expect(part.state).toEqual({ status: 'error', input: {}, error: 'Tool execution aborted', metadata: { interrupted: true }, time: { start: 1, end: 8 } })
  expect(stopCall(part, { kind: 'turn-failed', errorName: 'StorageError' }, 8)).toBe(true) // the failure's row replaces the aborted one
  expect(part.state).toMatchObject({ error: 'Tool not run: the turn failed (StorageError)' })
  expect(stopCall(part, { kind: 'restart' }, 9)).toBe(false) // closed earlier: left as it is
  const done = call()
  runCall(done, {}, 1)
  completeCall(done, 'ok', 2)
  expect(stopCall(done, { kind: 'aborted' }, 3)).toBe(false)
})
