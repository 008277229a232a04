/**
 * A prompt's input: a string, or an AI SDK user message content (text, image and file parts,
 * each a URL or bytes). Stored as parts (`text` and `file`), bytes as base64 up to
 * `maxFileBytes`; turned back into exactly that content for the model.
 */
import type { UserContent } from 'ai'
import { FileTooLargeError, InvalidArgumentError } from '../core/errors'
import type { UserPartDraft } from '../core/types'

export type { UserPartDraft }

/** What `engine.prompt` takes: text, or the content of an AI SDK user message. */
export type PromptInput = string | UserContent


function isUrlString(value: string): boolean {
  return /^(https?:|data:)/i.test(value)
}

/** URL or bytes → `{ url }` or `{ data: base64 }`, refusing bytes over `maxBytes`. */
function source(argument: string, value: unknown, mediaType: string | undefined, maxBytes: number): { url: string } | { data: string } {
  if (value instanceof URL) return { url: value.toString() }
  let bytes: Buffer
  if (typeof value === 'string') {
    if (isUrlString(value)) {
      // A data: URL holds the bytes themselves: the same limit applies.
      if (/^data:/i.test(value) && Math.floor((value.length * 3) / 4) > maxBytes) throw new FileTooLargeError(Math.floor((value.length * 3) / 4), maxBytes, mediaType)
      return { url: value }
    }
    bytes = Buffer.from(value, 'base64')
  } else if (value instanceof Uint8Array) bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  else if (value instanceof ArrayBuffer) bytes = Buffer.from(value)
  else throw new InvalidArgumentError(argument, value, 'a URL, a base64 string, a Uint8Array, a Buffer or an ArrayBuffer')
  if (bytes.byteLength > maxBytes) throw new FileTooLargeError(bytes.byteLength, maxBytes, mediaType)
  return { data: bytes.toString('base64') }
}

/**
 * Validates a prompt input and turns it into part drafts. Throws `InvalidArgumentError` for an
 * empty or malformed input, `FileTooLargeError` for bytes over `maxFileBytes`.
 *
 * @example
 * userParts([{ type: 'text', text: 'What is this?' }, { type: 'image', image: png, mediaType: 'image/png' }], 10_000_000)
 */
export function userParts(input: unknown, maxFileBytes: number): UserPartDraft[] {
  if (typeof input === 'string') {
    if (input.trim().length === 0) throw new InvalidArgumentError('input', input, 'a non-empty string or a user message content')
    return [{ type: 'text', text: input }]
  }
  if (!Array.isArray(input) || input.length === 0) throw new InvalidArgumentError('input', input, 'a non-empty string or a non-empty array of text, image and file parts')
  const drafts: UserPartDraft[] = []
  input.forEach((item: unknown, index) => {
    const argument = `input[${index}]`
    const part = item as { type?: unknown; text?: unknown; image?: unknown; data?: unknown; mediaType?: unknown; filename?: unknown }
    if (typeof item !== 'object' || item === null) throw new InvalidArgumentError(argument, item, 'a text, image or file part')
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw new InvalidArgumentError(`${argument}.text`, part.text, 'a string')
      drafts.push({ type: 'text', text: part.text })
    } else if (part.type === 'image') {
      if (part.mediaType !== undefined && typeof part.mediaType !== 'string') throw new InvalidArgumentError(`${argument}.mediaType`, part.mediaType, 'a media type')
      drafts.push({ type: 'file', image: true, ...(part.mediaType ? { mediaType: part.mediaType } : {}), ...source(`${argument}.image`, part.image, part.mediaType, maxFileBytes) })
    } else if (part.type === 'file') {
      if (typeof part.mediaType !== 'string' || part.mediaType.length === 0) throw new InvalidArgumentError(`${argument}.mediaType`, part.mediaType, "a media type, e.g. 'application/pdf'")
      if (part.filename !== undefined && typeof part.filename !== 'string') throw new InvalidArgumentError(`${argument}.filename`, part.filename, 'a string')
      drafts.push({ type: 'file', mediaType: part.mediaType, ...(part.filename ? { filename: part.filename } : {}), ...source(`${argument}.data`, part.data, part.mediaType, maxFileBytes) })
    } else {
      throw new InvalidArgumentError(`${argument}.type`, part.type, "'text', 'image' or 'file'")
    }
  })
  const hasContent = drafts.some((d) => d.type === 'file' || d.text.trim().length > 0)
  if (!hasContent) throw new InvalidArgumentError('input', input, 'at least one non-empty text part, image or file')
  return drafts
}
