/**
 * A scripted reply in the OpenAI Responses protocol: one output item per run of reasoning (a
 * summary; `signature` is its `encrypted_content`), text (a message) or tool call (a
 * `function_call`), between `response.created` and `response.completed` (or
 * `response.incomplete` when `finish` is given, e.g. `'max_output_tokens'`).
 */
import { argumentsOf, halves, typedRawEvent, type ProtocolWriter, type ScriptToolCall, type StreamContext } from './scripted-stream'

type OpenItem = { kind: 'reasoning' | 'text'; id: string; text: string; encrypted?: string }

export class ResponsesWriter implements ProtocolWriter {
  #sequence = 0
  #outputIndex = -1
  #open: OpenItem | undefined
  readonly #tag: string
  readonly #created = Math.floor(Date.now() / 1000)

  constructor(private readonly context: StreamContext) {
    this.#tag = `${context.nextId()}${context.idTag}`
  }

  start(): void {
    this.#event({ type: 'response.created', response: this.#response('in_progress', { output: [] }) })
  }

  text(text: string): void {
    if (this.#open?.kind !== 'text') this.#startItem('text')
    const open = this.#open!
    open.text += text
    this.#event({ type: 'response.output_text.delta', item_id: open.id, output_index: this.#outputIndex, content_index: 0, delta: text, logprobs: [] })
  }

  reasoning(reasoning: string, signature?: string): void {
    if (this.#open?.kind !== 'reasoning') this.#startItem('reasoning', signature)
    const open = this.#open!
    if (signature !== undefined) open.encrypted = signature
    open.text += reasoning
    this.#event({ type: 'response.reasoning_summary_text.delta', item_id: open.id, output_index: this.#outputIndex, summary_index: 0, delta: reasoning })
  }

  raw(raw: string): void {
    this.context.write(typedRawEvent(raw))
  }

  async tool({ name, input, id }: ScriptToolCall): Promise<void> {
    this.#closeItem()
    const output_index = (this.#outputIndex += 1)
    const args = argumentsOf(input)
    const [head, tail] = halves(args)
    const call = { type: 'function_call', id: `fc_${this.#tag}_${output_index}`, call_id: id, name, arguments: '', status: 'in_progress' }
    this.#event({ type: 'response.output_item.added', output_index, item: call })
    await this.context.pause()
    this.#event({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index, delta: head })
    await this.context.pause()
    this.#event({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index, delta: tail })
    this.#event({ type: 'response.function_call_arguments.done', item_id: call.id, output_index, arguments: args })
    this.#event({ type: 'response.output_item.done', output_index, item: { ...call, arguments: args, status: 'completed' } })
  }

  end(finish: string | undefined): void {
    this.#closeItem()
    const usage = this.context.usage
    const incomplete = finish !== undefined && finish !== 'completed'
    const counts = {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
      total_tokens: usage.input + usage.output,
    }
    const response = this.#response(incomplete ? 'incomplete' : 'completed', { incomplete_details: incomplete ? { reason: finish } : null, usage: counts })
    this.#event({ type: incomplete ? 'response.incomplete' : 'response.completed', response })
  }

  #response(status: string, fields: Record<string, unknown>) {
    return { id: `resp_${this.#tag}`, object: 'response', created_at: this.#created, model: this.context.model, status, ...fields }
  }

  #item(open: OpenItem, status: string) {
    if (open.kind === 'text') return { type: 'message', id: open.id, role: 'assistant', status, content: status === 'completed' ? [{ type: 'output_text', text: open.text, annotations: [] }] : [] }
    return { type: 'reasoning', id: open.id, summary: status === 'completed' ? [{ type: 'summary_text', text: open.text }] : [], encrypted_content: open.encrypted ?? null }
  }

  #startItem(kind: OpenItem['kind'], encrypted?: string): void {
    this.#closeItem()
    this.#outputIndex += 1
    const open: OpenItem = { kind, id: `${kind === 'text' ? 'msg' : 'rs'}_${this.#tag}_${this.#outputIndex}`, text: '', encrypted }
    this.#open = open
    this.#event({ type: 'response.output_item.added', output_index: this.#outputIndex, item: this.#item(open, 'in_progress') })
    if (kind === 'reasoning') this.#event({ type: 'response.reasoning_summary_part.added', item_id: open.id, output_index: this.#outputIndex, summary_index: 0, part: { type: 'summary_text', text: '' } })
  }

  #closeItem(): void {
    const open = this.#open
    if (!open) return
    const at = { item_id: open.id, output_index: this.#outputIndex }
    if (open.kind === 'reasoning') this.#event({ type: 'response.reasoning_summary_part.done', ...at, summary_index: 0, part: { type: 'summary_text', text: open.text } })
    else this.#event({ type: 'response.output_text.done', ...at, content_index: 0, text: open.text })
    this.#event({ type: 'response.output_item.done', output_index: this.#outputIndex, item: this.#item(open, 'completed') })
    this.#open = undefined
  }

  #event(data: { type: string } & Record<string, unknown>): void {
    this.context.write(`event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: this.#sequence++ })}\n\n`)
  }
}
