/**
 * `turnchart demo [--inspect] [--db <file or postgres:// URL>]`: one real agent session, end to end.
 *
 * Without configuration the model is the scripted OpenAI-compatible server
 * (`turnchart/testing`), started in-process with a built-in script: streamed reasoning and
 * text, a real tool call (listing a folder), a 429 answered with a retry, a context overflow
 * answered with a compaction, a sub-agent run as a child turn (run trees), and an abort. With TURNCHART_BASE_URL, TURNCHART_API_KEY and
 * TURNCHART_MODEL set, the same agent and prompts run against that endpoint instead.
 */
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { jsonSchema, tool } from 'ai'
import { createEngine } from '../engine/create-engine'
import { retryWaitStates } from '../../machines/turn.machine'
import { agentTool } from '../tools/agent-tool'
import type { Engine } from '../engine/engine'
import type { EngineModel, EngineOptions } from '../config/options'
import type { TurnchartEvent } from '../core/bus'
import type { Part } from '../core/types'
import { startScriptedServer, type ScriptedServer } from '../testing/scripted-server'
import { parseArgs, UsageError } from './args'
import { closeOnSignal, onTerminationSignals, waitForSignal } from './signals'
import { inspectorUiUrl, startInspectorRelay } from './inspector-relay'
import { CliError, colors, formatTransition, json, truncate, type CliIO, type Colors } from './io'
import { readOnlyLocation } from '../store/backends/read-only-store'

/** The four prompts of the demo session (the same against a real model). */
const demoPrompts = {
  list: 'What is in the current folder? Use the list tool.',
  summarise: 'Read it all and summarise the project for me.',
  delegate: 'Ask the researcher which entries of this folder are folders.',
  poem: 'Now write a very long poem about state machines.',
}

/** The entries of a folder (folders with a trailing /), sorted, at most 50. */
export async function listFolder(folder: string): Promise<string[]> {
  const entries = await fs.readdir(path.resolve(folder), { withFileTypes: true })
  return entries
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort()
    .slice(0, 50)
}

/** The listing tool: real, read-only, bounded. */
export const listTool = tool({
  description: 'List the entries of a folder (names, with a trailing / for folders)',
  inputSchema: jsonSchema<{ path: string }>({
    type: 'object',
    properties: { path: { type: 'string', description: 'the folder, relative to the working directory' } },
    required: ['path'],
    additionalProperties: false,
  }),
  execute: async ({ path: folder }) => listFolder(folder),
})

/** The sub-agent: a child turn of its own (its chart, its retries), with the list tool only. */
export const researcherTool = agentTool({
  description: 'Ask a researcher, a sub-agent that can list folders, a question about this folder; it answers in a sentence',
  inputSchema: jsonSchema<{ question: string }>({
    type: 'object',
    properties: { question: { type: 'string' } },
    required: ['question'],
    additionalProperties: false,
  }),
  system: 'You are a researcher. Answer the question in one sentence, using the list tool to look at folders.',
  tools: ['list'],
  toPrompt: ({ question }) => question,
})

/** The built-in script: what the scripted server answers, call by call. */
async function queueDemoScript(server: ScriptedServer, cwd: string): Promise<void> {
  const entries = await listFolder(cwd)
  const shown = entries.slice(0, 6).join(', ')
  // Turn 1: reasoning + text + a tool call; a 429 on the next step; then the answer.
  server.push({
    type: 'stream',
    delayMs: 12,
    chunks: [
      ...words('The user wants to know what this folder holds. The list tool can tell me.').map((w) => ({ reasoning: w })),
      ...words('Let me look at the folder.').map((w) => ({ text: w })),
      { tool: { name: 'list', input: { path: '.' } } },
    ],
    usage: { input: 120, output: 30, reasoning: 14 },
  })
  server.error(429, { error: { message: 'Rate limit reached for requests. Please retry shortly.', type: 'rate_limit_error' } }, { 'retry-after-ms': '1500' })
  server.push({
    type: 'stream',
    delayMs: 12,
    chunks: words(`The folder holds ${entries.length} entries, among them ${shown}.`).map((w) => ({ text: w })),
    usage: { input: 260, output: 24 },
  })
  // Turn 2: the request overflows the context; the history is summarised, then the step is retried.
  server.error(400, {
    error: {
      message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens.",
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    },
  })
  server.text(`Summary: the user asked what the folder holds; the list tool showed ${entries.length} entries (${shown}). Next: summarise the project.`, { usage: { input: 300, output: 40 } })
  server.push({
    type: 'stream',
    delayMs: 12,
    chunks: words('From what I saw, this is a small project: source code, tests and docs, run by an explicit statechart.').map((w) => ({ text: w })),
    usage: { input: 90, output: 22 },
  })
  // Turn 3: the parent calls the researcher; its child turn lists the folder and answers; the parent goes on.
  const folders = entries.filter((e) => e.endsWith('/'))
  server.push({
    type: 'stream',
    delayMs: 12,
    chunks: [...words('I will ask the researcher.').map((w) => ({ text: w })), { tool: { name: 'researcher', input: { question: 'Which entries of the current folder are folders?' } } }],
    usage: { input: 140, output: 20 },
  })
  server.push({ type: 'stream', delayMs: 12, chunks: [{ tool: { name: 'list', input: { path: '.' } } }], usage: { input: 60, output: 10 } })
  // (every folder named when they are few; the first six and how many more otherwise)
  const named = folders.length > 6 ? `${folders.slice(0, 6).join(', ')} and ${folders.length - 6} more` : folders.join(', ')
  const childAnswer = folders.length ? `${folders.length} of them are folders: ${named}.` : 'None of them is a folder.'
  server.push({ type: 'stream', delayMs: 12, chunks: words(childAnswer).map((w) => ({ text: w })), usage: { input: 120, output: 16 } })
  server.push({ type: 'stream', delayMs: 12, chunks: words(`The researcher says: ${childAnswer}`).map((w) => ({ text: w })), usage: { input: 200, output: 18 } })
  // Turn 4: a long answer that is aborted half way.
  server.push({
    type: 'stream',
    delayMs: 40,
    chunks: words(
      'In idle the actor waits, a prompt upon the stack; then streaming, token after token, it never looks back; ' +
        'a tool is called, the tools run, the answer finds its way; and should the model be overloaded, retry-waiting holds the day. ' +
        'When context overflows its banks, compacting trims the tale, and every transition is a row, so no one tells it stale.',
    ).map((w) => ({ text: w })),
    end: 'hang',
  })
}

function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? [text]
}

/** Prints the conversation as it streams and each transition as it is committed. */
export function createPrinter(io: CliIO, c: Colors): DemoPrinter {
  return new DemoPrinter(io, c)
}

/** The demo's terminal: the conversation as it streams, each transition, a retry's countdown; a child turn's lines indented under its parent's. */
class DemoPrinter {
  #atLineStart = true
  /** Run trees: a child turn's lines are indented under its parent's, one level per generation. */
  readonly #depths = new Map<string, number>()
  #prefix = ''
  readonly #partTypes = new Map<string, string>()
  readonly #streamed = new Set<string>()
  readonly #summaries = new Set<string>()
  #retryTimer: NodeJS.Timeout | undefined
  #retrying = false

  constructor(
    private readonly io: CliIO,
    private readonly c: Colors,
  ) {}

  /** Prints what `event` says (a subscriber of the engine: bound). */
  readonly onEvent = (event: TurnchartEvent): void => {
    if (event.parentTurnId && event.turnId && !this.#depths.has(event.turnId)) this.#depths.set(event.turnId, (this.#depths.get(event.parentTurnId) ?? 0) + 1)
    const depth = event.turnId ? (this.#depths.get(event.turnId) ?? 0) : 0
    this.#prefix = depth ? this.c.dim('  │ '.repeat(depth)) : ''
    try {
      this.#print(event)
    } finally {
      this.#prefix = '' // the demo's own lines are not indented
    }
  }

  line(text: string): void {
    this.#write(`${this.#atLineStart ? '' : '\n'}${this.#prefix}${text}\n`)
  }

  close(): void {
    clearInterval(this.#retryTimer)
  }

  #print(event: TurnchartEvent): void {
    const { c } = this
    switch (event.type) {
      case 'part.delta':
        return this.#delta(event.partId, event.delta)
      case 'message.updated':
        if (event.info.summary) this.#summaries.add(event.info.id)
        return
      case 'part.updated':
        return this.#part(event.part)
      case 'turn.transition':
        if (retryWaitStates.has(event.from)) this.#stopRetryLine()
        return this.line(c.dim('  [') + formatTransition(event, c) + c.dim(']'))
      case 'session.status':
        return event.status.type === 'retry' ? this.#retry(event.status) : this.#stopRetryLine()
      case 'session.error':
        return this.line(c.red(`  ! ${event.error.name}: ${event.error.message}`))
    }
  }

  #write(text: string): void {
    if (text.length === 0) return
    this.io.stdout.write(text)
    this.#atLineStart = text.endsWith('\n')
  }

  #delta(partId: string, delta: string): void {
    const { c } = this
    const type = this.#partTypes.get(partId)
    if (!this.#streamed.has(partId)) {
      this.#streamed.add(partId)
      this.#write(`${this.#atLineStart ? '' : '\n'}${this.#prefix}${type === 'reasoning' ? c.dim('thinking ›') : c.green('assistant ›')} `)
    }
    this.#write(type === 'reasoning' ? c.dim(delta) : delta)
  }

  #part(part: Part): void {
    const { c } = this
    this.#partTypes.set(part.id, part.type)
    if (part.step === undefined && !this.#summaries.has(part.messageId)) return // the user's
    if ((part.type === 'text' || part.type === 'reasoning') && part.time.end !== undefined && !this.#streamed.has(part.id) && part.text) {
      // Not streamed (the compaction summary is produced in one piece): print it whole.
      this.#streamed.add(part.id)
      this.line(`${this.#summaries.has(part.messageId) ? c.magenta('summary ›') : c.green('assistant ›')} ${truncate(part.text, 400)}`)
    } else if (part.type === 'tool' && part.state.status === 'running') {
      this.line(c.yellow(`  ⚙ ${part.tool}(${json(part.state.input)})`))
    } else if (part.type === 'tool' && part.state.status === 'completed') {
      this.line(c.yellow(`  ✓ ${part.tool} → ${truncate(json(part.state.output), 100)}`))
    } else if (part.type === 'tool' && part.state.status === 'error') {
      this.line(c.red(`  ✗ ${part.tool}: ${part.state.error}`))
    } else if (part.type === 'compaction') {
      this.line(c.magenta('  (the context is full: summarising the history)'))
    }
  }

  /** A retry's wait: a live countdown on a terminal; elsewhere (a log, a pipe) one line per attempt. */
  #retry({ attempt, message, next }: { attempt: number; message: string; next: number }): void {
    // `attempt` is the attempt that failed, numbered as on parts (the first is 1).
    const show = () => {
      const left = Math.max(0, next - Date.now()) / 1000
      const text = this.c.yellow(`  ⏳ attempt ${attempt} failed (${truncate(message, 60)}): attempt ${attempt + 1} in ${left.toFixed(1)} s`)
      if (this.io.stdout.isTTY) this.#write(`\r\x1b[2K${text}`)
      else this.line(text)
    }
    if (!this.#atLineStart) this.#write('\n')
    show()
    clearInterval(this.#retryTimer)
    this.#retrying = true
    this.#retryTimer = this.io.stdout.isTTY ? setInterval(show, 100) : undefined
  }

  #stopRetryLine(): void {
    if (!this.#retrying) return
    this.#retrying = false
    clearInterval(this.#retryTimer)
    this.#retryTimer = undefined
    if (this.io.stdout.isTTY) {
      this.io.stdout.write('\r\x1b[2K') // the countdown line is replaced
      this.#atLineStart = true
    }
    this.line(this.c.yellow('  … retrying now'))
  }
}

/** Picks the inspector port: 8080 when free, else any free port. */
async function freePort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const probe = net.createServer()
      probe.once('error', reject)
      probe.listen(port, '127.0.0.1', () => {
        const bound = (probe.address() as net.AddressInfo).port
        probe.close(() => resolve(bound))
      })
    })
  return tryListen(preferred).catch(() => tryListen(0))
}

// A real dynamic import: @statelyai/inspect is ESM only and this file compiles to CommonJS.
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<any>

async function startInspector(port: number) {
  let inspectModule: any
  try {
    inspectModule = await importEsm('@statelyai/inspect')
  } catch {
    throw new CliError('--inspect needs the optional peer dependency @statelyai/inspect: npm install -D @statelyai/inspect')
  }
  const relay = await startInspectorRelay(port)
  const inspector = inspectModule.createWebSocketInspector({ url: `ws://127.0.0.1:${relay.port}` })
  return {
    inspect: inspector.inspect as EngineOptions['inspect'],
    url: relay.url,
    port: relay.port,
    /** Lets the last events leave (forwarding is deferred), then closes both ends. */
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 250))
      inspector.stop()
      await relay.stop()
    },
  }
}


function waitForEnter(io: CliIO, prompt: string): Promise<void> {
  if (!process.stdin.isTTY) return Promise.resolve()
  io.stdout.write(prompt)
  return new Promise((resolve) => {
    process.stdin.resume()
    process.stdin.once('data', () => {
      process.stdin.pause()
      resolve()
    })
  })
}

/**
 * The part of `createOpenAICompatible` the demo calls, declared here: the package is an
 * optional peer, so turnchart's published types must not name it.
 */
export type DemoProvider = (settings: { name: string; baseURL: string; apiKey?: string; includeUsage?: boolean }) => (modelId: string) => EngineModel

/**
 * The demo's provider, `@ai-sdk/openai-compatible`, is an optional peer dependency (an app
 * brings its own provider): loaded only here, with a message saying what to install.
 */
export function loadDemoProvider(): DemoProvider {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('@ai-sdk/openai-compatible') as { createOpenAICompatible: DemoProvider }).createOpenAICompatible
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error
    throw new CliError('the demo needs the optional peer dependency @ai-sdk/openai-compatible: npm install @ai-sdk/openai-compatible@^2')
  }
}

function isUrl(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value)
}

export async function demoCommand(argv: string[], io: CliIO): Promise<number> {
  const { flags, values } = parseArgs(argv, { flags: ['inspect'], values: ['db', 'inspect-port'], positionals: 0 })
  const c = colors(io)
  const started = Date.now()
  const given = values.get('db')
  // A URL (postgres://) is a database as it is; anything else is a SQLite file path.
  const database = given !== undefined && isUrl(given) ? given : path.resolve(given ?? path.join(os.tmpdir(), `turnchart-demo-${started}.db`))
  // As its backend shows it (a URL without its password).
  const shown = readOnlyLocation(database)?.label ?? database
  const real = io.env.TURNCHART_BASE_URL
  const { model, server } = await demoModel(io)
  let inspector: Awaited<ReturnType<typeof startInspector>> | undefined
  let engine: Engine | undefined
  const printer = createPrinter(io, c)
  // Ctrl-C or a SIGTERM closes the engine (its turns end cleanly or stay resumable) before exiting.
  const signals = onTerminationSignals(async (signal) => {
    printer.close()
    await engine?.close(closeOnSignal(signal))
    await server?.close()
    await inspector?.stop()
  }, (text) => io.stderr.write(text))
  try {
    if (flags.has('inspect')) inspector = await openDemoInspector(io, printer, values.get('inspect-port'))
    printer.line(c.bold(real ? `turnchart demo against ${real} (model ${io.env.TURNCHART_MODEL})` : 'turnchart demo: a scripted OpenAI-compatible server on loopback (no API key needed)'))
    printer.line(c.dim(`database: ${shown}`))
    engine = await demoEngine(database, model, real !== undefined, inspector)
    engine.subscribe(printer.onEvent)
    const session = await engine.createSession({ title: 'turnchart demo' })
    printer.line(c.dim(`session: ${session.id}`))
    const turnIds = await runDemoTurns(engine, session.id, printer, c, real !== undefined)
    printer.line('')
    printer.line(c.bold(`Done in ${((Date.now() - started) / 1000).toFixed(1)} s. Everything is stored in ${shown}`))
    printNextCommands(printer, database, shown, session.id, turnIds)
    if (inspector) {
      // Keep serving the inspector (with or without a terminal) until Ctrl-C or SIGTERM.
      signals.dispose()
      printer.line(c.bold(`The inspector is still serving ${inspector.url}: Ctrl-C stops it.`))
      await waitForSignal()
    }
    return 0
  } finally {
    signals.dispose()
    printer.close()
    await engine?.close()
    await server?.close()
    await inspector?.stop()
  }
}

/** The demo's model: the endpoint named by TURNCHART_BASE_URL and TURNCHART_MODEL, else a scripted server on loopback playing the demo's script. */
async function demoModel(io: CliIO): Promise<{ model: EngineOptions['model']; server?: ScriptedServer }> {
  const real = io.env.TURNCHART_BASE_URL
  const createOpenAICompatible = loadDemoProvider()
  if (real) {
    if (!io.env.TURNCHART_MODEL) throw new CliError('TURNCHART_BASE_URL is set: set TURNCHART_MODEL too (and TURNCHART_API_KEY if the server needs one)')
    return { model: createOpenAICompatible({ name: 'turnchart-demo', baseURL: real, apiKey: io.env.TURNCHART_API_KEY, includeUsage: true })(io.env.TURNCHART_MODEL) }
  }
  const server = await startScriptedServer()
  await queueDemoScript(server, process.cwd())
  return { model: createOpenAICompatible({ name: 'scripted', baseURL: server.url, apiKey: 'demo', includeUsage: true })('scripted-demo'), server }
}

/** `--inspect`: the Stately inspector's relay on loopback, started once the user pressed Enter. */
async function openDemoInspector(io: CliIO, printer: DemoPrinter, portValue: string | undefined) {
  const c = colors(io)
  const port = portValue !== undefined ? Number(portValue) : await freePort(8080)
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new UsageError(`--inspect-port must be a port number, not ${portValue}`)
  const inspector = await startInspector(port)
  printer.line(c.bold(`Stately inspector: open ${inspector.url} in a browser (127.0.0.1 only)`))
  printer.line(c.dim(`  online: that page embeds Stately's inspector UI from ${inspectorUiUrl}; the events stay on this machine (WebSocket ws://127.0.0.1:${inspector.port})`))
  await waitForEnter(io, 'Press Enter to start the demo… ')
  return inspector
}

function demoEngine(database: string, model: EngineOptions['model'], real: boolean, inspector: Awaited<ReturnType<typeof startInspector>> | undefined): Promise<Engine> {
  return createEngine({
    database,
    model,
    system: 'You are a helpful agent. Use the list tool to look at folders, and the researcher for questions it can answer.',
    tools: { list: listTool, researcher: researcherTool },
    // Short delays keep the demo quick; a real endpoint gets the default policy.
    retry: real ? {} : { initialDelayMs: 200, maxDelayMs: 1000, maxHeaderDelayMs: 5000, jitter: 0 },
    compaction: { auto: true, maxPerTurn: 2 },
    streamIdleTimeoutMs: real ? 60_000 : 5_000,
    flushIntervalMs: 100,
    inspect: inspector?.inspect,
  })
}

/** The demo's prompts, one turn each (the poem's aborted once under way); returns the turns' ids. */
async function runDemoTurns(engine: Engine, sessionId: string, printer: DemoPrinter, c: Colors, real: boolean): Promise<string[]> {
  const turnIds: string[] = []
  for (const [key, prompt] of Object.entries(demoPrompts)) {
    printer.line('')
    printer.line(`${c.bold('you ›')} ${prompt}`)
    const turn = engine.prompt(sessionId, prompt)
    turnIds.push(turn.id)
    const stopAborting = key === 'poem' ? abortUnderWay(engine, turn, printer, c, real) : () => undefined
    const result = await turn.done
    stopAborting()
    printer.line(c.bold(`turn ${turn.id}: ${result.outcome}`) + (result.error ? c.dim(` (${result.error.name})`) : ''))
  }
  return turnIds
}

/** Aborts `turn` once its answer is well under way (or after a while, for a slow real model); returns the stop. */
function abortUnderWay(engine: Engine, turn: { abort(reason?: string): void }, printer: DemoPrinter, c: Colors, real: boolean): () => void {
  let deltas = 0
  const abort = () => {
    printer.line(c.red('  (aborting the turn)'))
    turn.abort('the demo aborts the third turn')
  }
  const unsubscribe = engine.subscribe((event) => {
    if (event.type === 'part.delta' && ++deltas === (real ? 60 : 14)) abort()
  })
  const timer = setTimeout(abort, real ? 20_000 : 4_000)
  return () => {
    clearTimeout(timer)
    unsubscribe()
  }
}

/** The commands that read what the demo stored. With npx: in this repository (after npm install) and in an app that installed turnchart. */
function printNextCommands(printer: DemoPrinter, database: string, shown: string, sessionId: string, turnIds: string[]): void {
  // A URL is quoted: its `?` and `&` mean something to the shell.
  const argument = isUrl(database) ? `'${shown}'` : database
  printer.line(`  npx turnchart sessions ${argument}`)
  printer.line(`  npx turnchart show ${argument} ${sessionId}`)
  for (const id of turnIds) printer.line(`  npx turnchart replay ${argument} ${id}`)
}
