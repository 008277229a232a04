/**
 * The cassette file: each model call a recorder saw, in order, with its request summary and
 * its answer (the stream parts and how the stream ended, or the error the request failed
 * with), as JSON. Nothing secret: request headers are redacted, response headers cut to the
 * store's allowlist, error bodies redacted (src/core/redact-secrets.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { CassetteFormatError } from '../core/errors'
import type { CassetteError } from './cassette-json'

export const cassetteFormat = 'turnchart-cassette'
export const cassetteVersion = 1

export interface Cassette {
  format: typeof cassetteFormat
  version: typeof cassetteVersion
  /** The recorded model: its provider and id, and the specification version it answered with. */
  model: { provider: string; modelId: string; specificationVersion: string }
  calls: CassetteCall[]
}

export interface CassetteCall {
  /** What the call asked: the prompt, tools, tool choice and call settings; headers redacted. */
  request: RequestSummary
  /** The request failed before a stream (an HTTP error): what was thrown. */
  error?: CassetteError
  /** The stream: its parts in order (JSON, see cassette-json.ts) and its response headers (allowlisted). */
  response?: {
    headers?: Record<string, string>
    parts: unknown[]
    /** `close`: it ended; `cancel`: its reader stopped (after an error part, an abort); or the error the stream failed with. */
    end: 'close' | 'cancel' | { error: CassetteError }
  }
}

/** A call's options without its signal: JSON, bytes tagged as in the stream parts. */
export interface RequestSummary {
  prompt: unknown[]
  tools?: unknown[]
  toolChoice?: unknown
  settings?: Record<string, unknown>
  headers?: Record<string, string>
}

/**
 * @example
 * const cassette = readCassette('cassettes/weather.json')
 */
export function readCassette(file: string): Cassette {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (error) {
    throw new CassetteFormatError(file, `it cannot be read (${(error as { code?: string }).code ?? String(error)})`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new CassetteFormatError(file, `it is not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  return checkCassette(value, file)
}

/** `value` when it is a cassette of a version this turnchart reads; else a `CassetteFormatError`. */
export function checkCassette(value: unknown, label: string): Cassette {
  const cassette = value as Partial<Cassette> | null
  if (typeof cassette !== 'object' || cassette === null || cassette.format !== cassetteFormat) throw new CassetteFormatError(label, `its "format" is not "${cassetteFormat}"`)
  if (cassette.version !== cassetteVersion) throw new CassetteFormatError(label, `its version ${JSON.stringify(cassette.version)} is not ${cassetteVersion}`)
  if (!Array.isArray(cassette.calls)) throw new CassetteFormatError(label, 'it has no "calls" list')
  return cassette as Cassette
}

/**
 * Writes `cassette` to `file` at once (through a temporary file, so a reader never sees half of it).
 *
 * @example
 * writeCassette('weather.json', cassette)
 */
export function writeCassette(file: string, cassette: Cassette): void {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  const temporary = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temporary, `${JSON.stringify(cassette, null, 2)}\n`)
  fs.renameSync(temporary, file)
}
