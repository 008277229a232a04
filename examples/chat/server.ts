/**
 * The chat example: a Node HTTP server on 127.0.0.1 with turnchart's chat handler under
 * /api/chat and a useChat page bundled by esbuild at start (no CDN; works offline).
 *
 *   npm run example:chat            # scripted model (no key), prints the URL and the database
 *   npm run example:chat -- --db ./chat.db  # a database file of your choice (kept, reused)
 *   PORT=3000 npm run example:chat  # a fixed port
 *   TURNCHART_BASE_URL=... TURNCHART_MODEL=... TURNCHART_API_KEY=... npm run example:chat  # a real endpoint
 *
 * The database is kept after exit (a new file in the system's temporary folder unless --db),
 * so the CLI can read what the page did: npx turnchart sessions <db>.
 */
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool, type LanguageModel } from 'ai'
import { build, stop as stopEsbuild } from 'esbuild'
import { z } from 'zod'
import { createChatHandler, createEngine, defaultMaxBodyBytes, defer, scheduleTool, toNodeListener, type Engine, type WaitingCallEntry } from '../../src'
import { listFolder, listTool } from '../../src/cli/demo'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { examplePrompts, queueApprovalReply, queueCallReply, queueReminderReply, queueReplies, type CallSettlement } from './script'

export interface ChatExample {
  url: string
  engine: Engine
  /** The scripted model server, when no real endpoint is configured. */
  scripted?: ScriptedServer
  /** Stops the example; `{ handoff: true }` (SIGTERM) hands the running turns to the other engines first. */
  close(options?: { handoff?: boolean }): Promise<void>
}

const deployTool = tool({
  description: 'Deploy the site to an environment (asks the user first)',
  inputSchema: z.object({ env: z.string() }),
  needsApproval: true,
  execute: async ({ env }) => `deployed to ${env}`,
})

/** Its result comes later (the restaurant answers): the call is deferred, settled through `POST /api/chat/<id>/calls`. */
const bookTool = tool({
  description: 'Ask the restaurant for a table; it answers later',
  inputSchema: z.object({ guests: z.number() }),
  execute: async () => defer({ timeoutMs: 60 * 60_000 }),
})

/** Not idempotent (a second run charges twice), and slow: a process killed while it runs leaves the call in doubt. */
const chargeTool = tool({
  description: 'Charge the card (never run twice unasked)',
  inputSchema: z.object({ euros: z.number() }),
  execute: async ({ euros }, { abortSignal }) => {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, 20_000)
      abortSignal?.addEventListener('abort', () => (clearTimeout(timer), reject(abortSignal.reason)), { once: true })
    })
    return `charged ${euros} euros`
  },
})

/** Bundles the page (React + useChat) into one script, in memory. */
async function bundlePage(): Promise<string> {
  const result = await build({
    entryPoints: [path.join(__dirname, 'page.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    jsx: 'automatic',
    minify: true,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  })
  await stopEsbuild() // its service process would keep the server's process alive
  return result.outputFiles[0].text
}

/**
 * Starts the example. `port` 0 (default) takes a free one. Without `database`, a temporary
 * file deleted by `close()` (tests); the command line always passes one, which is kept.
 *
 * @example
 * const app = await startChatExample({ port: 0 })
 * console.log(app.url)
 */
export async function startChatExample(options: { port?: number; database?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ChatExample> {
  const env = options.env ?? process.env
  let scripted: ScriptedServer | undefined
  let model: LanguageModel
  if (env.TURNCHART_BASE_URL) {
    if (!env.TURNCHART_MODEL) throw new Error('TURNCHART_BASE_URL is set: set TURNCHART_MODEL too (and TURNCHART_API_KEY if the server needs one)')
    model = createOpenAICompatible({ name: 'turnchart-example', baseURL: env.TURNCHART_BASE_URL, apiKey: env.TURNCHART_API_KEY, includeUsage: true })(env.TURNCHART_MODEL)
  } else {
    scripted = await startScriptedServer()
    model = createOpenAICompatible({ name: 'scripted', baseURL: scripted.url, apiKey: 'example', includeUsage: true })('scripted-example')
  }
  const dir = options.database ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-chat-'))
  const engine = await createEngine({
    database: options.database ?? path.join(dir!, 'chat.db'),
    model,
    limits: { context: 128_000, output: 8_192 },
    // `remind`: the model schedules a follow-up on this chat (approved first); the engine starts it then.
    tools: { list: listTool, deploy: deployTool, book: bookTool, charge: chargeTool, remind: scheduleTool() },
    // The page may edit the deploy call's input before approving it.
    editableApprovals: ['deploy'],
  })
  // 'detach': a reload must not abort the turn; the page's stop button sends DELETE.
  // 'steer': what the user sends while a turn runs joins that turn at its next step boundary.
  const handler = createChatHandler(engine, { onDisconnect: 'detach', whenBusy: 'steer' })
  // With the scripted model, a turn a reminder started gets the reminder's answer (no page asked for it).
  if (scripted) {
    const reminders = scripted
    engine.subscribe((event) => {
      if (event.type === 'schedule.fired') queueReminderReply(reminders)
    })
  }
  // With the scripted model, a new prompt first queues the replies its keyword calls for, and an
  // approval decision the answer that fits it.
  const api = toNodeListener(async (request) => {
    // Only a body that declares a length within the handler's limit is read twice (here, then by the handler).
    const length = Number(request.headers.get('content-length'))
    if (scripted && request.method === 'POST' && length <= defaultMaxBodyBytes) {
      type Body = { id?: string; messages?: Array<{ role: string; parts: Array<{ text?: string; state?: string; approval?: { approved?: boolean } }> }> }
      const body = (await request.clone().json().catch(() => undefined)) as Body | undefined
      const last = body?.messages?.at(-1)
      if (last?.role === 'user' && body?.id && !engine.activeTurn(body.id)) queueReplies(scripted, last.parts.map((p) => p.text ?? '').join(' '), entries)
      const decision = last?.role === 'assistant' ? last.parts.find((p) => p.state === 'approval-responded') : undefined
      const waiting = body?.id ? engine.status(body.id) : undefined
      if (decision && waiting?.type === 'busy' && waiting.state === 'awaiting-approval') {
        const call = (await engine.waiting({ sessionId: body!.id! })).find((entry): entry is WaitingCallEntry => entry.kind === 'approval')
        queueApprovalReply(scripted, call?.toolName ?? 'deploy', decision.approval?.approved === true)
      }
    }
    // A waiting call settled (POST <api>/<id>/calls): the answer that fits it.
    const calls = /^\/api\/chat\/([^/]+)\/calls$/.exec(new URL(request.url).pathname)
    if (scripted && calls && request.method === 'POST' && length <= defaultMaxBodyBytes) {
      const { callId, ...settlement } = ((await request.clone().json().catch(() => ({}))) ?? {}) as { callId?: string } & CallSettlement
      const call = (await engine.waiting({ sessionId: decodeURIComponent(calls[1]) })).find((entry): entry is WaitingCallEntry => entry.kind !== 'throttled' && entry.callId === callId)
      if (call) queueCallReply(scripted, call.toolName, settlement)
    }
    return handler(request)
  })
  const [script, entries] = await Promise.all([bundlePage(), listFolder(process.cwd())])
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>turnchart chat</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="/favicon.svg" type="image/svg+xml">
<script>window.__PROMPTS__ = ${JSON.stringify(Object.values(examplePrompts))}</script></head>
<body><div id="root"></div><script type="module" src="/page.js"></script></body></html>`

  /** A speech bubble in the page's accent colour. */
  const favicon = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M2 2h12v9H7l-4 3v-3H2z" fill="#2563eb"/></svg>'

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    // The messages steered into a chat that no turn took yet (one sent while an approval waits): its texts.
    const queued = /^\/api\/chat\/([^/]+)\/queued$/.exec(url.pathname)
    if (queued && req.method === 'GET') {
      void Promise.resolve()
        .then(() => engine.queue(decodeURIComponent(queued[1])))
        .catch(() => [])
        .then((records) => {
          const texts = records.filter((r) => r.kind === 'steer').map((r) => r.input.map((p) => (p.type === 'text' ? p.text : '')).join(''))
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(texts))
        })
      return
    }
    if (url.pathname.startsWith('/api/chat')) return api(req, res)
    if (url.pathname === '/page.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' })
      return res.end(script)
    }
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      return res.end(page)
    }
    // The page links the SVG; a browser that asks for /favicon.ico anyway gets it too, not a 404.
    if (url.pathname === '/favicon.svg' || url.pathname === '/favicon.ico') {
      res.writeHead(200, { 'content-type': 'image/svg+xml', 'cache-control': 'max-age=86400' })
      return res.end(favicon)
    }
    res.writeHead(404).end()
  })

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return {
    url,
    engine,
    scripted,
    /**
     * Stops the example. `{ handoff: true }` (SIGTERM, a deploy): the engine hands its running
     * turns to the other engines on the database at their next step gate, and the responses it
     * is streaming go on through the new owners until they end; then the server closes.
     */
    async close(closeOptions: { handoff?: boolean } = {}) {
      if (closeOptions.handoff) {
        // New connections refused; the open responses (their turns handed off) finish first.
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        await engine.close({ handoff: true })
        handler.close()
        await closed
        await scripted?.close()
        if (dir) fs.rmSync(dir, { recursive: true, force: true })
        return
      }
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      handler.close()
      await engine.close()
      await scripted?.close()
      if (dir) fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** `--db <file>` or `--db=<file>`, the only argument; anything else is refused. */
function databaseArgument(argv: string[]): string | undefined {
  const [first, second, ...rest] = argv
  if (first === undefined) return undefined
  const value = first === '--db' ? second : first.startsWith('--db=') ? first.slice('--db='.length) : undefined
  if (!value || rest.length > 0 || (first.startsWith('--db=') && second !== undefined)) {
    console.error('usage: npm run example:chat [-- --db <file>]')
    process.exit(2)
  }
  return path.resolve(value)
}

if (require.main === module) {
  // A file the process does not delete, so the CLI (and a second run with --db) can read it.
  const database = databaseArgument(process.argv.slice(2)) ?? path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-chat-')), 'chat.db')
  startChatExample({ port: process.env.PORT ? Number(process.env.PORT) : 0, database }).then(
    (app) => {
      console.log(`turnchart chat example: ${app.url}`)
      console.log(`database: ${database} (kept after exit; read it with npx turnchart sessions ${database})`)
      console.log(app.scripted ? `scripted model; try: ${Object.values(examplePrompts).join(' | ')}` : 'model: TURNCHART_BASE_URL')
      // SIGTERM (a deploy, a supervisor): running turns handed to the other engines on the database; Ctrl-C: they stop where they are.
      process.once('SIGINT', () => app.close().then(() => process.exit(0)))
      process.once('SIGTERM', () => app.close({ handoff: true }).then(() => process.exit(0)))
    },
    (error) => {
      console.error(error instanceof Error ? error.message : error)
      process.exit(1)
    },
  )
}
