/**
 * Random scripts, fixed invariants: fast-check generates model behaviour (text, reasoning,
 * tool calls, tool failures, HTTP errors of every class, hangs, resets, early closes, aborts
 * at random moments, overflows); each script runs as one turn of the real engine, and the
 * invariants of issue 3 are checked after every run. Replay a failure with
 * TURNCHART_SEED=<seed> (and TURNCHART_PATH=<path> for the shrunk case) as printed.
 */
import fc from 'fast-check'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { startScriptedServer, type ScriptReply, type ScriptedServer } from '../../src/testing'
import { replayLog } from './support/chart-model'
import { CoverageRecorder } from './support/coverage'
import { startRig, turnInvariantViolations, type Rig, type ToolBehaviour } from './support/rig'

type Behaviour =
  | { kind: 'text'; reasoning: boolean; overflow: boolean }
  | { kind: 'tools'; calls: number; overflow: boolean; text: boolean }
  | { kind: 'http'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'broken'; end: 'reset' | 'close' | 'hang' }
  | { kind: 'hang' }

interface Script {
  replies: Behaviour[]
  tools: ToolBehaviour[]
  /** Abort the turn this many ms after the prompt (null: never). */
  abortAfterMs: number | null
}

const httpErrors: Array<Extract<Behaviour, { kind: 'http' }>> = [
  { kind: 'http', status: 429, body: { error: { message: 'rate limited', type: 'rate_limit_error' } }, headers: { 'retry-after-ms': '1' } },
  { kind: 'http', status: 500, body: { error: { message: 'internal' } } },
  { kind: 'http', status: 503, body: { error: { message: 'overloaded' } } },
  { kind: 'http', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
  { kind: 'http', status: 400, body: { error: { type: 'invalid_request_error', message: 'bad request' } } },
  { kind: 'http', status: 401, body: { error: { message: 'invalid api key' } } },
  { kind: 'http', status: 403, body: { error: { message: 'forbidden' } } },
  { kind: 'http', status: 404, body: { error: { message: 'no such model' } } },
  { kind: 'http', status: 429, body: { error: { code: 'insufficient_quota', message: 'quota' } } },
  { kind: 'http', status: 400, body: { error: { code: 'context_length_exceeded', message: 'too long' } } },
  { kind: 'http', status: 413, body: 'Request Entity Too Large' },
  { kind: 'http', status: 429, body: { error: { message: 'wait' } }, headers: { 'retry-after': '3600' } },
]

const behaviour: fc.Arbitrary<Behaviour> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('text' as const), reasoning: fc.boolean(), overflow: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tools' as const), calls: fc.integer({ min: 1, max: 2 }), overflow: fc.boolean(), text: fc.boolean() }) },
  { weight: 3, arbitrary: fc.constantFrom(...httpErrors) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('broken' as const), end: fc.constantFrom('reset' as const, 'close' as const, 'hang' as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'hang' as const }) },
)

const script: fc.Arbitrary<Script> = fc.record({
  replies: fc.array(behaviour, { minLength: 1, maxLength: 6 }),
  tools: fc.array(fc.constantFrom<ToolBehaviour>('ok', 'ok', 'throw'), { maxLength: 6 }),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 40 }), { freq: 3 }),
})

/** Reply i's words are `r<i>w<j>`: a text part with words of two replies mixes attempts. */
function toReply(b: Behaviour, i: number): ScriptReply {
  const usage = (overflow: boolean) => (overflow ? { input: 950, output: 10 } : { input: 10, output: 5 })
  const words = [0, 1, 2].map((j) => ({ text: `r${i}w${j} ` }))
  switch (b.kind) {
    case 'text':
      return { type: 'stream', chunks: [...(b.reasoning ? [{ reasoning: `r${i}think ` }] : []), ...words], usage: usage(b.overflow) }
    case 'tools':
      return {
        type: 'stream',
        chunks: [...(b.text ? words : []), ...Array.from({ length: b.calls }, (_, k) => ({ tool: { name: 'work', input: { n: i * 10 + k } } }))],
        usage: usage(b.overflow),
      }
    case 'http':
      return { type: 'error', status: b.status, body: b.body, headers: b.headers }
    case 'broken':
      return { type: 'stream', chunks: words.slice(0, 2), end: b.end }
    case 'hang':
      return { type: 'hang' }
  }
}

const maxAttempts = 3
const seed = process.env.TURNCHART_SEED ? Number(process.env.TURNCHART_SEED) : Date.now() ^ (Math.random() * 0x7fffffff)
const replayPath = process.env.TURNCHART_PATH
const numRuns = Number(process.env.TURNCHART_RUNS ?? 200)
const coverage = new CoverageRecorder(__filename)
let knownHangs = 0

let rig: Rig
let server: ScriptedServer | undefined
beforeAll(async () => {
  // One engine for every run; each run gets its own scripted server (so no reply outlives
  // its script), reached through a fetch that follows `server`.
  const provider = createOpenAICompatible({
    name: 'scripted',
    baseURL: 'http://scripted.invalid/v1',
    apiKey: 'test-key',
    includeUsage: true,
    fetch: (url, init) => fetch(String(url).replace('http://scripted.invalid/v1', server!.url), init),
  })
  rig = await startRig({ model: provider('test-model'), streamIdleTimeoutMs: 40, retry: { initialDelayMs: 1, maxDelayMs: 4, jitter: 0, maxAttempts }, toolExecution: { timeoutMs: 2000 } })
})
afterAll(async () => {
  coverage.write()
  await rig?.close()
})

async function runScript(s: Script): Promise<string[]> {
  server = await startScriptedServer()
  server.push(...s.replies.map(toReply))
  rig.tools.splice(0, rig.tools.length, ...s.tools)
  const session = await rig.engine.createSession()
  const turn = rig.engine.prompt(session.id, 'go')
  const timer = s.abortAfterMs === null ? undefined : setTimeout(() => turn.abort(), s.abortAfterMs)
  const problems: string[] = []
  let guard: NodeJS.Timeout | undefined
  try {
    const result = await Promise.race([
      turn.done,
      new Promise<never>((_, reject) => (guard = setTimeout(() => reject(new Error('the turn did not end within 3 s')), 3000))),
    ]).catch((error) => {
      // KNOWN ENGINE BUG (see 'a hanging summary request' below): compaction has no idle
      // timeout, so a summary request that never answers hangs the turn. Counted, not failed,
      // until it is fixed; every other hang must end.
      const status = rig.engine.status(session.id)
      if (status.type === 'busy' && status.state === 'compacting') {
        knownHangs += 1
        return null
      }
      throw error
    })
    clearTimeout(guard)
    if (result === null) return problems
    clearTimeout(timer)
    problems.push(...(await turnInvariantViolations(rig.engine, session.id, turn.id)))
    if (!['completed', 'failed', 'aborted'].includes(result.outcome)) problems.push(`outcome ${result.outcome}`)

    // the persisted log, replayed with the pure transition() from the stored input
    const rows = await rig.engine.transitions(turn.id)
    const replay = replayLog(rig.storedInput(turn.id), rows)
    if (JSON.stringify(replay.states) !== JSON.stringify(rows.map((r) => r.to))) {
      problems.push(`replay reached ${replay.states.join(' → ')}; the log says ${rows.map((r) => r.to).join(' → ')}`)
    }
    replay.edges.forEach((edge, i) => edge === null && problems.push(`row ${rows[i].seq} (${rows[i].from} --${rows[i].event}--> ${rows[i].to}) takes no edge`))
    coverage.record('random scripts (invariants.test.ts)', replay.edges.filter((e): e is string => e !== null))

    // HTTP calls within the retry bound: one call per streaming/compacting entry, at most
    // maxAttempts per step, never more than scripted
    const entries = rows.filter((r) => r.to === 'streaming' || r.to === 'compacting').length
    if (server.calls > entries) problems.push(`${server.calls} HTTP calls for ${entries} request states`)
    // (+1: a call past the script is answered 400 by the server, which ends the turn)
    if (server.calls > s.replies.length + 1) problems.push(`${server.calls} HTTP calls for ${s.replies.length} replies`)
    let retries = 0
    for (const row of rows) {
      if (row.to === 'retry-waiting') retries += 1
      else if (row.event !== 'xstate.after.retryDelay.turn.retry-waiting' && row.to === 'streaming') retries = 0
      if (retries > maxAttempts - 1) problems.push(`${retries + 1} attempts of one step (max ${maxAttempts})`)
    }

    // no text part holds text of two attempts (two replies)
    const messages = await rig.engine.messages(session.id)
    for (const part of messages.flatMap((m) => m.parts)) {
      if (part.type !== 'text') continue
      const replies = new Set([...part.text.matchAll(/r(\d+)w\d/g)].map((m) => m[1]))
      if (replies.size > 1) problems.push(`text part ${part.id} mixes replies ${[...replies].join(', ')}: ${JSON.stringify(part.text)}`)
      if (part.attempt !== undefined && part.attempt > maxAttempts) problems.push(`part attempt ${part.attempt}`)
    }
  } finally {
    clearTimeout(timer)
    clearTimeout(guard)
    await rig.engine.abort(session.id)
    await server.close()
  }
  return problems
}

test(`invariants hold for ${numRuns} random scripts (seed ${seed})`, async () => {
  // eslint-disable-next-line no-console
  console.log(`fast-check seed ${seed}: replay with TURNCHART_SEED=${seed}`)
  await fc.assert(
    fc.asyncProperty(script, async (s) => {
      const problems = await runScript(s)
      if (problems.length) throw new Error(`invariants violated:\n  ${problems.join('\n  ')}`)
    }),
    { seed, numRuns, ...(replayPath ? { path: replayPath, endOnFailure: true } : {}), interruptAfterTimeLimit: 50_000 },
  )
  // eslint-disable-next-line no-console
  if (knownHangs) console.log(`${knownHangs} run(s) hit the known hanging-summary bug`)
}, 60_000)

// Shrunk counterexample (seed 1680108950, path 147:1:2:2:2:2): a tool step whose usage
// overflows, then a summary request that never answers. The step's stream has an idle timeout
// (streamIdleTimeoutMs); the summary request has none, so the turn stays in `compacting`
// forever. ENGINE BUG, reported; flip to `test` once src/compaction/summarize.ts times out.
test('a hanging summary request ends the turn (streamIdleTimeoutMs applies to compaction)', async () => {
  const problems = await runScript({ replies: [{ kind: 'tools', calls: 1, overflow: true, text: false }, { kind: 'hang' }], tools: [], abortAfterMs: null })
  expect(problems).toEqual([])
  expect(knownHangs).toBe(0)
}, 10_000)
