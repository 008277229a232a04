/**
 * The memory a turn's streams hold (issue 34), in a process of its own run with
 * `--expose-gc`: a 10 MB answer streamed through a chat handler (its POST read to the end),
 * then three readers of the turn's own streams (`fullStream`, `textStream`,
 * `toUIMessageStreamResponse()`) read to the end. Prints the heap used after a full collection
 * before the turn and after the readers (the turn still held), and the answer's size.
 */
import { memoryTextModel } from '../support/memory-text-model'
import { createChatHandler, createEngine } from '../../src'

const pieces = 2_000
const piece = 'x'.repeat(4_999) + ' '
const answerBytes = pieces * piece.length

/** Reads a stream to its end, keeping only how many characters passed. */
async function drain(stream: ReadableStream<unknown>): Promise<number> {
  let chars = 0
  for await (const item of stream as unknown as AsyncIterable<unknown>) chars += typeof item === 'string' ? item.length : item instanceof Uint8Array ? item.byteLength : JSON.stringify(item).length
  return chars
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc
  if (!gc) throw new Error('run with --expose-gc')
  for (let i = 0; i < 4; i++) gc()
  return process.memoryUsage().heapUsed
}

async function main(): Promise<void> {
  const engine = await createEngine({ database: ':memory:', model: memoryTextModel(pieces, (i) => piece.slice(0, -1) + String(i % 10)), recovery: { onOpen: false, intervalMs: 0 } })
  const handler = createChatHandler(engine)
  await engine.createSession({ id: 'big' })
  const before = heapAfterGc()
  const response = await handler(new Request('http://127.0.0.1/api/chat', { method: 'POST', body: JSON.stringify({ id: 'big', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'write' }] }] }) }))
  const turn = engine.activeTurn('big')!
  const page = await drain(response.body!)
  const result = await turn.done
  const read = [await drain(turn.fullStream), await drain(turn.textStream), await drain(turn.toUIMessageStreamResponse().body!)]
  const after = heapAfterGc()
  process.stdout.write(`${JSON.stringify({ outcome: result.outcome, textLength: result.text.length, answerBytes, before, after, page, read })}\n`)
  // (held to here: the turn, its parts and its streams are what is measured)
  void turn.id
  handler.close()
  await engine.close()
}

void main()
