/**
 * A model server on 127.0.0.1 speaking OpenAI's chat completions stream that answers every
 * request at once, from the request itself: a call of the tool `step` while the conversation
 * has fewer than `steps` tool results, then a text. Any number of turns, retried or resumed in
 * any order, each get the same multi-tool turn (a queued script cannot: a retry takes another
 * turn's reply).
 */
import * as http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'

export interface ToolLoopServer {
  /** The provider's model on this server. */
  model: ReturnType<ReturnType<typeof createOpenAICompatible>>
  /** Requests answered. */
  readonly calls: number
  close(): Promise<void>
}

function chunk(delta: Record<string, unknown>, finish: string | null): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-loop', object: 'chat.completion.chunk', created: 0, model: 'loop', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
}

export async function startToolLoopServer(steps: number): Promise<ToolLoopServer> {
  let calls = 0
  const sockets = new Set<import('node:net').Socket>()
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      calls++
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { messages: Array<{ role: string }> }
      const done = body.messages.filter((m) => m.role === 'tool').length
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      if (done < steps) {
        const call = { index: 0, id: `call_${done}_${calls}`, type: 'function', function: { name: 'step', arguments: JSON.stringify({ n: done }) } }
        res.write(chunk({ role: 'assistant', tool_calls: [call] }, null))
        res.write(chunk({}, 'tool_calls'))
      } else {
        res.write(chunk({ role: 'assistant', content: `done after ${done} steps` }, null))
        res.write(chunk({}, 'stop'))
      }
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-loop', object: 'chat.completion.chunk', created: 0, model: 'loop', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`)
      res.end('data: [DONE]\n\n')
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const provider = createOpenAICompatible({ name: 'loop', baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'test-key', includeUsage: true })
  return {
    model: provider('loop'),
    get calls() {
      return calls
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}
