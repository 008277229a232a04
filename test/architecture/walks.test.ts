/**
 * The walks of docs/architecture.md, traced: a real turn (the scripted server over HTTP on
 * 127.0.0.1, the AI SDK's provider, a SQLite file) meets a 429, retries, and streams a text
 * delta; the call stack is recorded where a bus subscriber receives the delta, where the
 * delta's part row is written, where the app's classifier is asked about the 429, where its
 * retry-waiting row is written and where the retried request is sent. Each stack, reduced to
 * our frames (src/, machines/; no line numbers) and cut to where its walk begins, must be the
 * block of the doc. `npm run walks:docs` rewrites the blocks from a new trace.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { classifyError, createEngine, type Engine, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { acrossHop, captureSegments, traceTimers, type Segment } from '../support/call-stacks'
import { callsBetweenModules, currentWalkBlock, cutLeg, describe as describeStack, filesOf, renderWalkBlock, replaceWalkBlock, type WalkSpec } from '../support/walk-docs'

const docFile = path.resolve(__dirname, '../../docs/architecture.md')
/** `npm run walks:docs` sets it: the blocks are rewritten instead of compared. */
const writing = process.env.TURNCHART_WRITE_WALKS === '1'
/** A file outside the repository to dump every recorded stack to (all stretches, uncut). */
const rawFile = process.env.TURNCHART_WALKS_RAW

type Capture = 'subscriber' | 'partRow' | 'classifier' | 'retryRow' | 'retriedFetch'

const walks: WalkSpec<Capture>[] = [
  {
    id: 'delta-subscriber',
    legs: [{ capture: 'subscriber', title: 'the delta, from the provider\'s stream to a bus subscriber (engine.subscribe)', start: { file: 'src/llm/model-stream.ts' } }],
  },
  {
    id: 'delta-row',
    legs: [{ capture: 'partRow', title: 'the delta, from the provider\'s stream to the statement that writes its part row', start: { file: 'src/llm/model-stream.ts' } }],
  },
  {
    id: 'retry',
    legs: [
      { capture: 'classifier', title: 'the 429, from the step actor to the error classifier (the app\'s errorClassifier)', start: { hops: 0 } },
      { capture: 'retryRow', title: 'the retry-waiting transition, from the log\'s write job to its row', start: { hops: 1 } },
      { capture: 'retriedFetch', title: 'the retry timer, to the retried request (the provider\'s fetch)', start: { hops: 2 } },
    ],
  },
]

const deltaText = 'walked-delta'

/**
 * Calls `onRun` with the SQL and parameters of every better-sqlite3 statement run (Kysely's
 * SQLite driver runs a writing statement with `run`), until the returned function restores it.
 */
function watchStatements(onRun: (sql: string, parameters: unknown[]) => void): () => void {
  const Database = require('better-sqlite3') as new (file: string) => { prepare(sql: string): object; close(): void }
  const probe = new Database(':memory:')
  const prototype = Object.getPrototypeOf(probe.prepare('select 1')) as { run: (...parameters: unknown[]) => unknown }
  probe.close()
  const run = prototype.run
  prototype.run = function (this: { source: string }, ...parameters: unknown[]) {
    onRun(this.source, parameters)
    return run.apply(this, parameters)
  }
  return () => {
    prototype.run = run
  }
}

interface Recorded {
  captures: Partial<Record<Capture, Segment[]>>
  transitions: string[]
  requests: number
  partText: string
}

/** Runs the turn the walks follow and records a stack at each capture point. */
async function recordWalks(): Promise<Recorded> {
  const names: Capture[] = ['subscriber', 'partRow', 'classifier', 'retryRow', 'retriedFetch']
  const captures: Recorded['captures'] = {}
  let allCaptured: () => void = () => undefined
  const all = new Promise<void>((resolve) => (allCaptured = resolve))
  const capture = (name: Capture) => {
    if (captures[name]) return
    captures[name] = captureSegments()
    if (names.every((each) => captures[each])) allCaptured()
  }

  const restoreTimers = traceTimers()
  const restoreStatements = watchStatements(function onRun(sql, parameters) {
    const values = JSON.stringify(parameters)
    if (/insert into "turnchart_parts"/.test(sql) && values.includes(deltaText)) capture('partRow')
    if (/insert into "turnchart_transitions"/.test(sql) && values.includes('"retry-waiting"')) capture('retryRow')
  })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-walks-'))
  let server: ScriptedServer | undefined
  let engine: Engine | undefined
  try {
    server = await startScriptedServer()
    let requests = 0
    const provider = createOpenAICompatible({
      name: 'scripted',
      baseURL: server.url,
      apiKey: 'test-key',
      includeUsage: true,
      fetch: function retriedFetch(input, init) {
        requests++
        if (requests === 2) capture('retriedFetch')
        return fetch(input, init)
      },
    })
    const inner = provider('walk-model')
    // The provider's fetch runs after awaits V8's async stack loses (doStream is raced against
    // the abort signal): the call of doStream is carried over as a hop.
    const model = new Proxy(inner, {
      get: (target, key) =>
        key === 'doStream' ? (options: Parameters<typeof inner.doStream>[0]) => acrossHop('doStream', () => target.doStream(options)) : Reflect.get(target, key),
    })
    engine = await createEngine({
      database: path.join(dir, 'walks.db'),
      model,
      limits: { context: 100_000, output: 10_000 },
      retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
      // Long enough that the step's first flush always holds the delta (the part row's walk
      // is the interval flush's), short enough to keep the test fast.
      flushIntervalMs: 1000,
      errorClassifier: function classifier(error) {
        capture('classifier')
        return classifyError(error)
      },
    })
    engine.subscribe(function subscriber(event: TurnchartEvent) {
      if (event.type === 'part.delta' && event.delta === deltaText) capture('subscriber')
    })
    server.error(429, { error: { message: 'rate limited' } }, { 'retry-after-ms': '5' })
    // The stream stays open: the delta's row is the interval flush's, not the step's last row.
    server.push({ type: 'stream', chunks: [{ text: deltaText }], end: 'hang' })
    const session = await engine.createSession()
    const turn = engine.prompt(session.id, 'walk')
    // A path the code no longer takes (no 429 retried, no interval flush) says which point was not reached.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      all,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the turn did not reach: ${names.filter((each) => !captures[each]).join(', ')}`)), 15_000)
      }),
    ]).finally(() => clearTimeout(timer))
    const parts = (await engine.messages(session.id)).flatMap((message) => message.parts)
    turn.abort()
    await turn.done
    return {
      captures,
      transitions: (await engine.transitions(turn.id)).map((row) => row.to),
      requests,
      partText: parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join(''),
    }
  } finally {
    restoreStatements()
    restoreTimers()
    await engine?.close()
    await server?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

let recorded: Recorded

beforeAll(async () => {
  recorded = await recordWalks()
}, 30_000)

test('the walks follow a real turn: a 429, its retry, a streamed delta and its row', () => {
  expect(recorded.requests).toBe(2)
  expect(recorded.transitions.slice(0, 4)).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming'])
  // The part row the stack was taken at holds the delta (read back from the file).
  expect(recorded.partText).toContain(deltaText)
})

test('docs/architecture.md lists each walk as its recorded call stacks', () => {
  let text = fs.readFileSync(docFile, 'utf8')
  const raw: string[] = []
  const stale: string[] = []
  for (const walk of walks) {
    const legs = walk.legs.map((spec) => cutLeg(spec, recorded.captures[spec.capture]!))
    const block = renderWalkBlock(walk.id, legs)
    raw.push(`=== walk ${walk.id}: ${callsBetweenModules(legs)} calls between modules, ${filesOf(legs).length} files`)
    for (const spec of walk.legs) raw.push(`--- ${spec.capture} (every recorded stretch, innermost first)\n${describeStack(recorded.captures[spec.capture]!)}`)
    raw.push(block)
    if (currentWalkBlock(text, walk.id) === block) continue
    if (writing) text = replaceWalkBlock(text, walk.id, block)
    else stale.push(`walk ${walk.id}:\n--- in docs/architecture.md\n${currentWalkBlock(text, walk.id) ?? '(no block)'}\n+++ recorded\n${block}`)
  }
  if (rawFile) fs.writeFileSync(rawFile, raw.join('\n\n') + '\n')
  if (writing) fs.writeFileSync(docFile, text)
  if (stale.length > 0) {
    throw new Error(`The code's path changed: docs/architecture.md's walks are out of date. Run \`npm run walks:docs\` to rewrite them from a new trace (and read the prose around them).\n\n${stale.join('\n\n')}`)
  }
})
