/**
 * A request's body, bounded: counted while it streams in, and refused past a limit without
 * reading the rest (a body declared larger than the limit is not read at all). What a server
 * must do before `request.json()`, which buffers whatever a client sends.
 */

export type BodyRead = { ok: true; text: string } | { ok: false; reason: 'too-large' }

/**
 * The body as text when it is at most `maxBytes` long. Past the limit the stream is cancelled
 * (`toNodeListener` then stops reading the socket and closes the connection after the answer).
 *
 * @example
 * const read = await readBody(request, 32 * 1024 * 1024)
 * if (!read.ok) return new Response(null, { status: 413 })
 */
export async function readBody(request: Request, maxBytes: number): Promise<BodyRead> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (Number.isFinite(declared) && declared > maxBytes) {
    await request.body?.cancel().catch(() => undefined)
    return { ok: false, reason: 'too-large' }
  }
  if (!request.body) return { ok: true, text: '' }
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined)
      return { ok: false, reason: 'too-large' }
    }
    chunks.push(value)
  }
  return { ok: true, text: Buffer.concat(chunks, total).toString('utf8') }
}
