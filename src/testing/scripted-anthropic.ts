/** A scripted reply in the Anthropic Messages protocol: one content block per run of text, thinking, or tool call. */
import { argumentsOf, halves, typedRawEvent, type ProtocolWriter, type ScriptToolCall, type StreamContext } from './scripted-stream'

type BlockKind = 'text' | 'thinking' | 'tool'

export class AnthropicWriter implements ProtocolWriter {
  #index = -1
  #open: { kind: BlockKind; signed?: boolean } | undefined

  constructor(private readonly context: StreamContext) {}

  start(): void {
    const { model, usage, idTag } = this.context
    const counts = { input_tokens: usage.input, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cacheRead ?? 0, output_tokens: 1 }
    const id = `msg_${this.context.nextId()}_${idTag}`
    this.#event({ type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: counts } })
  }

  text(text: string): void {
    if (this.#open?.kind !== 'text') this.#startBlock('text', { type: 'text', text: '' })
    this.#delta({ type: 'text_delta', text })
  }

  reasoning(reasoning: string, signature?: string): void {
    if (this.#open?.kind !== 'thinking' || this.#open.signed) this.#startBlock('thinking', { type: 'thinking', thinking: '', signature: '' })
    this.#delta({ type: 'thinking_delta', thinking: reasoning })
    if (signature === undefined) return
    this.#delta({ type: 'signature_delta', signature })
    this.#open!.signed = true
  }

  raw(raw: string): void {
    this.context.write(typedRawEvent(raw))
  }

  async tool({ name, input, id }: ScriptToolCall): Promise<void> {
    const [head, tail] = halves(argumentsOf(input))
    this.#startBlock('tool', { type: 'tool_use', id, name, input: {} })
    await this.context.pause()
    this.#delta({ type: 'input_json_delta', partial_json: head })
    await this.context.pause()
    this.#delta({ type: 'input_json_delta', partial_json: tail })
  }

  end(finish: string | undefined, hasTool: boolean): void {
    this.#stopBlock()
    const stop_reason = finish ?? (hasTool ? 'tool_use' : 'end_turn')
    this.#event({ type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: this.context.usage.output } })
    this.#event({ type: 'message_stop' })
  }

  #startBlock(kind: BlockKind, block: Record<string, unknown>): void {
    this.#stopBlock()
    this.#index += 1
    this.#open = { kind }
    this.#event({ type: 'content_block_start', index: this.#index, content_block: block })
  }

  #stopBlock(): void {
    if (this.#open) this.#event({ type: 'content_block_stop', index: this.#index })
    this.#open = undefined
  }

  #delta(delta: Record<string, unknown>): void {
    this.#event({ type: 'content_block_delta', index: this.#index, delta })
  }

  #event(data: { type: string } & Record<string, unknown>): void {
    this.context.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`)
  }
}
