/** A scripted reply in OpenAI's chat-completions protocol: a chunk per delta, then the finish, the usage and `[DONE]`. */
import { argumentsOf, halves, type ProtocolWriter, type ScriptToolCall, type StreamContext } from './scripted-stream'

export class OpenAIChatWriter implements ProtocolWriter {
  readonly #created = Math.floor(Date.now() / 1000)
  #first = true
  #toolIndex = 0

  constructor(private readonly context: StreamContext) {}

  text(text: string): void {
    this.#send({ content: text })
  }

  reasoning(reasoning: string): void {
    this.#send({ reasoning_content: reasoning })
  }

  raw(raw: string): void {
    this.#data(raw)
  }

  async tool({ name, input, id }: ScriptToolCall): Promise<void> {
    const index = this.#toolIndex++
    const [head, tail] = halves(argumentsOf(input))
    this.#send({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] })
    await this.context.pause()
    this.#send({ tool_calls: [{ index, function: { arguments: head } }] })
    await this.context.pause()
    this.#send({ tool_calls: [{ index, function: { arguments: tail } }] })
  }

  end(finish: string | undefined, hasTool: boolean): void {
    this.#send({}, finish ?? (hasTool ? 'tool_calls' : 'stop'))
    const usage = this.context.usage
    const counts = {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
      completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    }
    this.#data(JSON.stringify({ ...this.#chunk([]), usage: counts }))
    this.#data('[DONE]')
  }

  #send(delta: Record<string, unknown>, finishReason: string | null = null): void {
    // The first chunk announces the role, as OpenAI does.
    if (this.#first) delta = { role: 'assistant', ...delta }
    this.#first = false
    this.#data(JSON.stringify(this.#chunk([{ index: 0, delta, finish_reason: finishReason }])))
  }

  #chunk(choices: unknown[]) {
    const { model, idTag } = this.context
    return { id: `chatcmpl-${this.context.nextId()}-${idTag}`, object: 'chat.completion.chunk', created: this.#created, model, choices }
  }

  #data(data: string): void {
    this.context.write(`data: ${data}\n\n`)
  }
}
