/**
 * The running turn's history, converted step by step (`TurnModelMessages`): after every change a
 * turn makes between two model calls (a step streamed, a retried attempt, tools finished, a
 * steered message, a summary), it equals converting all the messages again
 * (`toModelMessages(messages, { finishedAttemptsOnly: true })`), and a step converted once is
 * not converted again.
 */
import type { MessageInfo, MessageWithParts, Part, ToolPart } from '../../src/core/types'
import { toModelMessages, TurnModelMessages } from '../../src/llm/model-messages'
import { message, session } from '../../src/testing/store-conformance/fixtures'

const s = session()
let n = 0
const id = (prefix: string) => `${prefix}_${String(++n).padStart(4, '0')}`

function assistant(): MessageWithParts {
  return { info: message(s.id, { role: 'assistant', turnId: 'trn_1' }), parts: [] }
}
function user(text: string): MessageWithParts {
  const info = message(s.id, { role: 'user', turnId: 'trn_1' })
  return { info, parts: [{ id: id('prt'), sessionId: s.id, messageId: info.id, type: 'text', text, time: { start: 1, end: 1 } }] }
}
function base(m: MessageInfo, step: number, attempt: number) {
  return { id: id('prt'), sessionId: m.sessionId, messageId: m.id, step, attempt }
}
/** One attempt of a step: text, a tool call (when `tool`), and its finish unless `failed`. */
function attemptParts(m: MessageInfo, step: number, attempt: number, options: { text: string; tool?: boolean; failed?: boolean }): Part[] {
  const parts: Part[] = [
    { ...base(m, step, attempt), type: 'step-start', time: { start: 1 } },
    { ...base(m, step, attempt), type: 'text', text: options.text, time: { start: 1, end: 2 } },
  ]
  if (options.tool) parts.push({ ...base(m, step, attempt), type: 'tool', callId: id('call'), tool: 'fetch', state: { status: 'running', input: { step }, time: { start: 2 } } } as ToolPart)
  if (!options.failed) parts.push({ ...base(m, step, attempt), type: 'step-finish', reason: options.tool ? 'tool-calls' : 'stop', tokens: { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0, time: { start: 3 } })
  return parts
}
function completeTools(m: MessageWithParts, step: number): void {
  for (const part of m.parts) {
    if (part.type === 'tool' && part.step === step && part.state.status === 'running') {
      part.state = { status: 'completed', input: part.state.input, output: `result of ${step}`, time: { start: 2, end: 3 } }
    }
  }
}

test('a turn converted step by step equals the whole conversion after every change', () => {
  const converted = new TurnModelMessages()
  const messages: MessageWithParts[] = [user('fetch the documents')]
  const check = () => expect(converted.convert(messages)).toEqual(toModelMessages(messages, { finishedAttemptsOnly: true }))
  let answer = assistant()
  messages.push(answer)
  check()
  for (let step = 1; step <= 4; step++) {
    // Step 2 fails once (its half answer is not sent), then its second attempt finishes.
    if (step === 2) {
      answer.parts.push(...attemptParts(answer.info, step, 1, { text: 'half an ans', tool: true, failed: true }))
      check()
      answer.parts.push(...attemptParts(answer.info, step, 2, { text: 'the answer', tool: true }))
    } else {
      answer.parts.push(...attemptParts(answer.info, step, 1, { text: `step ${step}`, tool: true }))
    }
    check()
    completeTools(answer, step)
    check()
  }
  // A steered message: the next steps go to a new assistant message after it.
  messages.push(user('also fetch the appendix'))
  answer = assistant()
  messages.push(answer)
  answer.parts.push(...attemptParts(answer.info, 5, 1, { text: 'the appendix', tool: true }))
  check()
  completeTools(answer, 5)
  answer.parts.push(...attemptParts(answer.info, 6, 1, { text: 'done' }))
  check()
  // A summary: the history starts there.
  const summary: MessageWithParts = { info: message(s.id, { role: 'assistant', turnId: 'trn_1', summary: true }), parts: [] }
  summary.parts.push({ ...base(summary.info, 6, 1), type: 'text', text: 'what happened', time: { start: 4, end: 4 } })
  messages.push(summary)
  check()
  answer = assistant()
  messages.push(answer)
  answer.parts.push(...attemptParts(answer.info, 7, 1, { text: 'after the summary' }))
  check()
})

test('a finished step is converted once: its parts are not read again by later calls', () => {
  const converted = new TurnModelMessages()
  const answer = assistant()
  const messages = [user('go'), answer]
  answer.parts.push(...attemptParts(answer.info, 1, 1, { text: 'first', tool: true }))
  completeTools(answer, 1)
  answer.parts.push(...attemptParts(answer.info, 2, 1, { text: 'second', tool: true }))
  const before = converted.convert(messages)
  // Step 1 is final (step 2 began): a change to its in-memory part would not be seen again.
  const first = answer.parts.find((p) => p.type === 'text' && p.step === 1) as { text: string }
  first.text = 'changed'
  expect(converted.convert(messages)).toEqual(before)
  expect(toModelMessages(messages, { finishedAttemptsOnly: true })).not.toEqual(before)
})

test('parts out of step order (rows no running turn wrote) are converted whole, as before', () => {
  const converted = new TurnModelMessages()
  const answer = assistant()
  const messages = [user('go'), answer]
  answer.parts.push(...attemptParts(answer.info, 2, 1, { text: 'two', tool: true }))
  answer.parts.push(...attemptParts(answer.info, 3, 1, { text: 'three', tool: true }))
  converted.convert(messages)
  answer.parts.push(...attemptParts(answer.info, 1, 1, { text: 'one', tool: true }))
  expect(converted.convert(messages)).toEqual(toModelMessages(messages, { finishedAttemptsOnly: true }))
})
