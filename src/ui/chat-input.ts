/**
 * A `useChat` user message as a prompt: its text parts and its file parts (what
 * `sendMessage({ text, files })` sends: `{ type: 'file', mediaType, filename?, url }`, the url a
 * `data:` URL of the file's bytes, or an http(s) URL) become the prompt's content parts, images
 * as image parts. Bytes are checked against the engine's `maxFileBytes` before anything is stored.
 */
import type { UIMessage, UserContent } from 'ai'
import { FileTooLargeError } from '../core/errors'

/** Why a message cannot be a prompt (the handler answers 400 with its message). */
export class UnusableMessage extends Error {
  override readonly name = 'UnusableMessage'
}

type ContentPart = Exclude<UserContent, string>[number]

/**
 * The prompt input of a user message. Throws `FileTooLargeError` for a file over
 * `maxFileBytes`, `UnusableMessage` for a message with neither text nor a file, or a file
 * whose URL is neither `data:` nor http(s).
 *
 * @example
 * engine.prompt(chatId, promptInputOf(lastMessage, engine.config.maxFileBytes))
 */
export function promptInputOf(message: UIMessage, maxFileBytes: number): UserContent {
  const content: ContentPart[] = []
  for (const part of message.parts) {
    if (part.type === 'text') {
      if (typeof part.text === 'string' && part.text.length > 0) content.push({ type: 'text', text: part.text })
    } else if (part.type === 'file') {
      content.push(filePart(part, maxFileBytes))
    }
    // Other parts (step boundaries, data parts, reasoning) say nothing to the model.
  }
  const hasText = content.some((p) => p.type !== 'text' || p.text.trim().length > 0)
  if (!hasText) throw new UnusableMessage('the last user message has neither text nor a file')
  return content
}

function filePart(part: { mediaType?: unknown; filename?: unknown; url?: unknown }, maxFileBytes: number): ContentPart {
  const mediaType = typeof part.mediaType === 'string' && part.mediaType.length > 0 ? part.mediaType : undefined
  if (!mediaType) throw new UnusableMessage('a file part has no mediaType')
  const filename = typeof part.filename === 'string' && part.filename.length > 0 ? part.filename : undefined
  const url = typeof part.url === 'string' ? part.url : ''
  let data: Uint8Array | URL
  if (/^data:/i.test(url)) data = dataUrlBytes(url, mediaType, maxFileBytes)
  else if (/^https?:\/\//i.test(url) && URL.canParse(url)) data = new URL(url)
  else throw new UnusableMessage(`a file part's url must be a data: URL (useChat's files) or an http(s) URL, got ${JSON.stringify(url.slice(0, 40))}`)
  if (mediaType.startsWith('image/')) return { type: 'image', image: data, mediaType }
  return { type: 'file', data, mediaType, ...(filename ? { filename } : {}) }
}

/** The bytes of a `data:` URL, refused over `maxFileBytes` before they are decoded. */
function dataUrlBytes(url: string, mediaType: string, maxFileBytes: number): Uint8Array {
  const comma = url.indexOf(',')
  if (comma < 0) throw new UnusableMessage('a file part has a malformed data: URL')
  const base64 = /;base64$/i.test(url.slice(0, comma))
  const payload = url.slice(comma + 1)
  // Base64 holds 3 bytes per 4 characters: an estimate that never allocates an oversized buffer.
  const estimate = base64 ? Math.floor((payload.length * 3) / 4) : payload.length
  if (estimate > maxFileBytes + 2) throw new FileTooLargeError(estimate, maxFileBytes, mediaType)
  let bytes: Buffer
  try {
    bytes = base64 ? Buffer.from(payload, 'base64') : Buffer.from(decodeURIComponent(payload), 'utf8')
  } catch {
    throw new UnusableMessage('a file part has a malformed data: URL')
  }
  if (bytes.byteLength > maxFileBytes) throw new FileTooLargeError(bytes.byteLength, maxFileBytes, mediaType)
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
