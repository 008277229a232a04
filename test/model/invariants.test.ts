/**
 * Random scripts, fixed invariants: fast-check generates model behaviour (text, reasoning,
 * tool calls, tool failures, HTTP errors of every class, hangs, resets, early closes, aborts
 * at random moments, overflows); each script runs as one turn of the real engine, and the
 * invariants of issue 3 are checked after every run. Tool calls may need approval (approved,
 * denied or aborted at random when `approval.requested` arrives) and may repeat their input
 * across steps (doom loops, policy `stop`). Replay a failure with
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
  /** `ask`: the first `ask` calls need approval; `same`: every call has input { n: 0 } (doom loops). */
  | { kind: 'tools'; calls: number; overflow: boolean; text: boolean; ask: number; same: boolean }
  | { kind: 'http'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'broken'; end: 'reset' | 'close' | 'hang' }
  | { kind: 'hang' }

interface Script {
  replies: Behaviour[]
  tools: ToolBehaviour[]
  /** Abort the turn this many ms after the prompt (null: never). */
  abortAfterMs: number | null
  /** What is done with each call waiting for approval, in order (then: approve). */
  decisions: Decision[]
}

type Decision = 'approve' | 'deny' | 'deny-with-reason' | 'abort'

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
  {
    weight: 3,
    arbitrary: fc
      .record({
        kind: fc.constant('tools' as const),
        calls: fc.integer({ min: 1, max: 2 }),
        overflow: fc.boolean(),
        text: fc.boolean(),
        ask: fc.integer({ min: 0, max: 2 }),
        same: fc.boolean(),
      })
      .map((b) => ({ ...b, ask: Math.min(b.ask, b.calls) })),
  },
  { weight: 3, arbitrary: fc.constantFrom(...httpErrors) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('broken' as const), end: fc.constantFrom('reset' as const, 'close' as const, 'hang' as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'hang' as const }) },
)

const script: fc.Arbitrary<Script> = fc.record({
  replies: fc.array(behaviour, { minLength: 1, maxLength: 6 }),
  tools: fc.array(fc.constantFrom<ToolBehaviour>('ok', 'ok', 'throw'), { maxLength: 6 }),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 40 }), { freq: 3 }),
  decisions: fc.array(fc.constantFrom<Decision>('approve', 'approve', 'deny', 'deny-with-reason', 'abort'), { maxLength: 6 }),
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
        chunks: [
          ...(b.text ? words : []),
          ...Array.from({ length: b.calls }, (_, k) => ({ tool: { name: 'work', input: { n: b.same ? 0 : i * 10 + k, ...(k < b.ask ? { ask: true } : {}) } } })),
        ],
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
  let aborted = false
  const timer = s.abortAfterMs === null ? undefined : setTimeout(() => ((aborted = true), turn.abort()), s.abortAfterMs)
  const problems: string[] = []
  // Each call waiting for approval gets the script's next decision, in the order requested.
  const decisions = [...s.decisions]
  const made: Array<{ callId: string; decision: Decision }> = []
  let deciding = Promise.resolve()
  const unsubscribe = rig.engine.subscribe((event) => {
    if (event.type !== 'approval.requested' || event.turnId !== turn.id) return
    deciding = deciding.then(async () => {
      for (const call of event.calls) {
        const decision = decisions.shift() ?? 'approve'
        made.push({ callId: call.callId, decision })
        try {
          if (decision === 'abort') {
            aborted = true
            turn.abort()
            return
          }
          if (decision === 'approve') await rig.engine.approve(turn.id, call.callId)
          else await rig.engine.deny(turn.id, call.callId, decision === 'deny-with-reason' ? 'no thanks' : undefined)
        } catch (error) {
          // an abort (the script's timer) may end the turn while it waits: then the call is not pending any more
          if (!aborted) problems.push(`${decision} of ${call.callId} threw ${String(error)}`)
        }
      }
    })
  })
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
    await deciding
    problems.push(...(await turnInvariantViolations(rig.engine, session.id, turn.id)))
    if (!['completed', 'failed', 'aborted'].includes(result.outcome)) problems.push(`outcome ${result.outcome}`)

    // the persisted log, replayed with the pure transition() from the stored input
    const rows = await rig.engine.transitions(turn.id)
    const replay = replayLog(rig.storedInput(turn.id), rows)
    if (JSON.stringify(replay.states) !== JSON.stringify(rows.map((r) => r.to))) {
      problems.push(`replay reached ${replay.states.join(' → ')}; the log says ${rows.map((r) => r.to).join(' → ')}`)
    }
    replay.edges.forEach((edge, i) => edge === null && problems.push(`row ${rows[i].seq} (${rows[i].from} --${rows[i].event}--> ${rows[i].to}) takes no edge`))
    coverage.record('random scripts (invariants.test.ts)', [...replay.edges.filter((e): e is string => e !== null), ...replay.eventless])

    // HTTP calls within the retry bound: one call per streaming/compacting entry, at most
    // maxAttempts per step, never more than scripted
    const entries = rows.filter((r) => r.to === 'streaming' || r.to === 'compacting').length
    if (server.calls > entries) problems.push(`${server.calls} HTTP calls for ${entries} request states`)
    // (+1: a call past the script is answered 400 by the server, which ends the turn; and one more
    // per stream the idle timeout cut: on a loaded machine a scripted reply can stall past
    // streamIdleTimeoutMs, and its retry then takes the next reply)
    // (a summary request's idle timeout is the CompactionFailedError's lastError)
    const idleTimeouts = rows.filter((r) => {
      const error = r.payload.error as { name?: string; lastError?: { name?: string } } | undefined
      return error?.name === 'StreamIdleTimeoutError' || error?.lastError?.name === 'StreamIdleTimeoutError'
    }).length
    if (server.calls > s.replies.length + 1 + idleTimeouts) {
      problems.push(`${server.calls} HTTP calls for ${s.replies.length} replies: ${rows.map((r) => `${r.from}>${r.event}>${r.to}`).join(' | ')}`)
    }
    let retries = 0
    for (const row of rows) {
      if (row.to === 'retry-waiting' || row.to === 'compaction-retry-waiting') retries += 1
      // attempts count per step, and per compaction (its summary request retries on its own count)
      else if (!row.event.startsWith('xstate.after.retryDelay.') && (row.to === 'streaming' || row.to === 'compacting')) retries = 0
      if (retries > maxAttempts - 1) problems.push(`${retries + 1} attempts of one step (max ${maxAttempts})`)
    }

    // approvals: one approval.requested per committed entry into awaiting-approval, naming calls
    // that asked (or loop); a denied call is an error saying so and never ran; an approved one ran
    // (or was stopped by the turn's end)
    const waits = rows.filter((r) => r.to === 'awaiting-approval' && r.from !== 'awaiting-approval').length
    const announced = rig.events.filter((e) => e.type === 'approval.requested' && e.turnId === turn.id).length
    if (announced !== waits) problems.push(`${announced} approval.requested events for ${waits} entries into awaiting-approval`)
    const messages = await rig.engine.messages(session.id)
    const tools = messages.flatMap((m) => m.parts).filter((p): p is Extract<typeof p, { type: 'tool' }> => p.type === 'tool')
    for (const { callId, decision } of made) {
      const part = tools.find((p) => p.callId === callId)
      if (!part) problems.push(`no part for the call ${callId} that asked for approval`)
      else if (decision === 'deny' || decision === 'deny-with-reason') {
        const error = decision === 'deny' ? 'the user denied this tool call' : 'the user denied this tool call: no thanks'
        if (part.state.status !== 'error' || part.state.error !== error || !part.state.metadata?.denied) {
          if (!aborted) problems.push(`denied call ${callId} is ${JSON.stringify(part.state)}`)
        }
      } else if (decision === 'approve' && part.state.status === 'error' && part.state.metadata?.denied) problems.push(`approved call ${callId} is marked denied`)
    }
    for (const part of tools) {
      if (part.state.status === 'error' && part.state.metadata?.denied && !made.some((m) => m.callId === part.callId && m.decision.startsWith('deny'))) {
        problems.push(`call ${part.callId} denied by nobody`)
      }
    }
    // the message of a tool that did not run or was stopped says why: the failed request, or the turn's end
    const endMessage = result.outcome === 'failed' ? `Tool not run: the turn failed (${result.error?.name})` : 'Tool execution aborted'
    for (const part of tools) {
      if (part.state.status !== 'error' || !part.state.metadata?.interrupted) continue
      const ok = part.state.error === 'The tool did not run: the model request failed and the step was retried or ended' || (result.outcome !== 'completed' && part.state.error === endMessage)
      if (!ok) problems.push(`interrupted tool part ${part.callId} of a ${result.outcome} turn says ${JSON.stringify(part.state.error)}`)
    }
    // a doom loop (policy stop) ends the turn at the step that completes the loop
    if (result.error?.name === 'DoomLoopError' && rows.at(-1)?.event !== 'step.finished') problems.push(`DoomLoopError but the last row is ${rows.at(-1)?.event}`)

    // no text part holds text of two attempts (two replies)
    for (const part of messages.flatMap((m) => m.parts)) {
      if (part.type !== 'text') continue
      const replies = new Set([...part.text.matchAll(/r(\d+)w\d/g)].map((m) => m[1]))
      if (replies.size > 1) problems.push(`text part ${part.id} mixes replies ${[...replies].join(', ')}: ${JSON.stringify(part.text)}`)
      if (part.attempt !== undefined && part.attempt > maxAttempts) problems.push(`part attempt ${part.attempt}`)
    }
  } finally {
    unsubscribe()
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
  const problems = await runScript({
    replies: [{ kind: 'tools', calls: 1, overflow: true, text: false, ask: 0, same: false }, { kind: 'hang' }],
    tools: [],
    abortAfterMs: null,
    decisions: [],
  })
  expect(problems).toEqual([])
  expect(knownHangs).toBe(0)
}, 10_000)
