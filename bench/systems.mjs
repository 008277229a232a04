// The systems under comparison. Each exposes the same small interface:
//   newSession(lane)                 -> session (a lane is the scripted server's reply queue)
//   turn(session, prompt, onDelta)   -> resolves when the turn is finished (and persisted)
//   dbPath                           -> the SQLite file, for persistent systems
//   close()
// The prompt of a session's first turn names its lane ("lane:<id>"), which is how the
// scripted server (server.mjs) picks the replies for this conversation.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

// Every system's modules are imported lazily, so a process running one system (workload 3)
// loads only that system's code and its RSS is its own.
const lazy = (name) => import(name)

/**
 * turnchart's build. run.mjs snapshots dist/ into bench/out/turnchart (TURNCHART_DIST), so a
 * rebuild of the shared dist/ during a run cannot pull the files from under it.
 */
export function turnchartEntry(file) {
  const dist = process.env.TURNCHART_DIST ?? new URL('../dist', import.meta.url).pathname
  return pathToFileURL(path.join(dist, 'esm', file)).href
}

// turnchart's dist/ loads the root's better-sqlite3; LangGraph's saver loads the bench's.
const rootRequire = createRequire(new URL('../package.json', import.meta.url))

export const TOOL_NAME = 'fetch_doc'
export const TOOL_RESULT = 'x'.repeat(1024) // 1 KB, returned at once
export const TOOL_DESCRIPTION = 'Fetch a document by number'
const MAX_STEPS = 50 // a bound on every loop, whatever the server sends

export async function aiSdkModel(baseURL) {
  const { createOpenAICompatible } = await lazy('@ai-sdk/openai-compatible')
  return createOpenAICompatible({ name: 'bench', baseURL, apiKey: 'bench', includeUsage: true })('scripted')
}
export async function aiSdkTools() {
  const { tool } = await lazy('ai')
  const { z } = await lazy('zod')
  return {
    [TOOL_NAME]: tool({
      description: TOOL_DESCRIPTION,
      inputSchema: z.object({ n: z.number() }),
      execute: async () => TOOL_RESULT,
    }),
  }
}

/** Plain fetch: POST, read the SSE lines, JSON.parse them, append to the history. No library. */
async function floor({ baseURL }) {
  const tools = [{ type: 'function', function: { name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } } }]
  return {
    name: 'transport floor (fetch)',
    short: 'floor',
    kind: 'floor',
    async newSession() {
      return { messages: [] }
    },
    async turn(session, prompt, onDelta) {
      const { messages } = session
      messages.push({ role: 'user', content: prompt })
      for (let step = 0; step < MAX_STEPS; step++) {
        const res = await fetch(`${baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
          body: JSON.stringify({ model: 'scripted', messages, tools, stream: true, stream_options: { include_usage: true } }),
        })
        if (!res.ok) throw new Error(`floor: HTTP ${res.status} ${await res.text()}`)
        const decoder = new TextDecoder()
        let buffer = ''
        let text = ''
        const calls = []
        for await (const bytes of res.body) {
          buffer += decoder.decode(bytes, { stream: true })
          let end
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const line = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
            const delta = JSON.parse(line.slice(6)).choices[0]?.delta
            if (!delta) continue
            if (delta.content) {
              text += delta.content
              onDelta(delta.content)
            }
            for (const call of delta.tool_calls ?? []) {
              const known = (calls[call.index] ??= { id: call.id, type: 'function', function: { name: call.function?.name ?? '', arguments: '' } })
              known.function.arguments += call.function?.arguments ?? ''
            }
          }
        }
        messages.push({ role: 'assistant', content: text, ...(calls.length ? { tool_calls: calls } : {}) })
        if (calls.length === 0) return
        for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: TOOL_RESULT })
      }
      throw new Error('floor: too many steps')
    },
    async close() {},
  }
}

/** A hand-written loop: one streamText call per step, the history kept in memory. */
async function handLoop({ baseURL }) {
  const { streamText } = await lazy('ai')
  const model = await aiSdkModel(baseURL)
  const tools = await aiSdkTools()
  return {
    name: 'AI SDK: hand loop over streamText',
    short: 'hand loop',
    kind: 'peer',
    async newSession() {
      return { messages: [] }
    },
    async turn(session, prompt, onDelta) {
      session.messages.push({ role: 'user', content: prompt })
      for (let step = 0; step < MAX_STEPS; step++) {
        const result = streamText({ model, messages: session.messages, tools, maxRetries: 0 })
        for await (const part of result.fullStream) {
          if (part.type === 'text-delta') onDelta(part.text)
          else if (part.type === 'error') throw part.error
        }
        session.messages.push(...(await result.response).messages)
        if ((await result.finishReason) !== 'tool-calls') return
      }
      throw new Error('hand loop: too many steps')
    },
    async close() {},
  }
}

/** streamText with stopWhen: the AI SDK runs the loop. */
async function stopWhenLoop({ baseURL }) {
  const { streamText, stepCountIs } = await lazy('ai')
  const model = await aiSdkModel(baseURL)
  const tools = await aiSdkTools()
  return {
    name: 'AI SDK: streamText + stopWhen',
    short: 'stopWhen',
    kind: 'peer',
    async newSession() {
      return { messages: [] }
    },
    async turn(session, prompt, onDelta) {
      session.messages.push({ role: 'user', content: prompt })
      const result = streamText({ model, messages: session.messages, tools, stopWhen: stepCountIs(MAX_STEPS), maxRetries: 0 })
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') onDelta(part.text)
        else if (part.type === 'error') throw part.error
      }
      session.messages.push(...(await result.response).messages)
    },
    async close() {},
  }
}

/** ToolLoopAgent (AI SDK 6). */
async function toolLoopAgent({ baseURL }) {
  const { ToolLoopAgent, stepCountIs } = await lazy('ai')
  const agent = new ToolLoopAgent({ model: await aiSdkModel(baseURL), tools: await aiSdkTools(), stopWhen: stepCountIs(MAX_STEPS), maxRetries: 0 })
  return {
    name: 'AI SDK: ToolLoopAgent',
    short: 'ToolLoopAgent',
    kind: 'peer',
    async newSession() {
      return { messages: [] }
    },
    async turn(session, prompt, onDelta) {
      session.messages.push({ role: 'user', content: prompt })
      const result = await agent.stream({ messages: session.messages })
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') onDelta(part.text)
        else if (part.type === 'error') throw part.error
      }
      session.messages.push(...(await result.response).messages)
    },
    async close() {},
  }
}

/** LangGraph.js createReactAgent with the SQLite checkpointer on a file (WAL, set by the saver). */
async function langGraph({ baseURL, dir }) {
  const { ChatOpenAI } = await lazy('@langchain/openai')
  const { tool: lcTool } = await lazy('@langchain/core/tools')
  const { AIMessageChunk } = await lazy('@langchain/core/messages')
  const { createReactAgent } = await lazy('@langchain/langgraph/prebuilt')
  const { SqliteSaver } = await lazy('@langchain/langgraph-checkpoint-sqlite')
  const { z } = await lazy('zod')
  const { default: Database } = await lazy('better-sqlite3')
  const dbPath = path.join(dir, 'langgraph.db')
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(dbPath + suffix, { force: true })
  const saver = SqliteSaver.fromConnString(dbPath)
  const llm = new ChatOpenAI({ model: 'scripted', apiKey: 'bench', configuration: { baseURL }, streaming: true, maxRetries: 0 })
  const fetchDoc = lcTool(async () => TOOL_RESULT, { name: TOOL_NAME, description: TOOL_DESCRIPTION, schema: z.object({ n: z.number() }) })
  const agent = createReactAgent({ llm, tools: [fetchDoc], checkpointSaver: saver })
  return {
    name: 'LangGraph.js createReactAgent + SQLite checkpointer (file)',
    short: 'LangGraph+SQLite',
    kind: 'peer',
    persistent: true,
    dbPath,
    sqlite: Database,
    ...langGraphCalls(agent, AIMessageChunk),
    async close() {
      saver.db.close()
    },
  }
}

/** A LangGraph agent's part of the system interface: a thread per session, deltas from its message stream. */
export function langGraphCalls(agent, AIMessageChunk) {
  let threads = 0
  return {
    async newSession() {
      return { thread: `thread-${++threads}` }
    },
    async turn(session, prompt, onDelta) {
      const stream = await agent.stream(
        { messages: [{ role: 'user', content: prompt }] },
        { configurable: { thread_id: session.thread }, streamMode: 'messages', recursionLimit: 2 * MAX_STEPS + 1 },
      )
      for await (const [message] of stream) {
        if (AIMessageChunk.isInstance(message) && typeof message.content === 'string' && message.content) onDelta(message.content)
      }
    },
  }
}

/**
 * Reference, not a peer: a hand loop on the provider's LanguageModelV3 `doStream`, without
 * streamText. Shows what the AI SDK provider alone costs (SSE parsing, chunk validation).
 */
async function doStreamLoop({ baseURL }) {
  const model = await aiSdkModel(baseURL)
  const tools = [{ type: 'function', name: TOOL_NAME, description: TOOL_DESCRIPTION, inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }]
  return {
    name: 'reference: hand loop over model.doStream (no streamText)',
    short: 'doStream loop',
    kind: 'reference',
    async newSession() {
      return { prompt: [] }
    },
    async turn(session, prompt, onDelta) {
      session.prompt.push({ role: 'user', content: [{ type: 'text', text: prompt }] })
      for (let step = 0; step < MAX_STEPS; step++) {
        const { stream } = await model.doStream({ prompt: session.prompt, tools })
        let text = ''
        const calls = []
        const reader = stream.getReader()
        for (;;) {
          const { done, value: part } = await reader.read()
          if (done) break
          if (part.type === 'text-delta') {
            text += part.delta
            onDelta(part.delta)
          } else if (part.type === 'tool-call') calls.push(part)
          else if (part.type === 'error') throw part.error
        }
        const content = text ? [{ type: 'text', text }] : []
        for (const call of calls) content.push({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: JSON.parse(call.input) })
        session.prompt.push({ role: 'assistant', content })
        if (calls.length === 0) return
        session.prompt.push({
          role: 'tool',
          content: calls.map((call) => ({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'text', value: TOOL_RESULT } })),
        })
      }
      throw new Error('doStream loop: too many steps')
    },
    async close() {},
  }
}

/** turnchart: one engine, a session per conversation, deltas from engine.subscribe. */
async function turnchart({ baseURL, dir }, onDisk) {
  const { createEngine } = await lazy(turnchartEntry('index.mjs'))
  const dbPath = onDisk ? path.join(dir, 'turnchart.db') : undefined
  if (dbPath) for (const suffix of ['', '-wal', '-shm']) fs.rmSync(dbPath + suffix, { force: true })
  return {
    name: onDisk ? 'turnchart, SQLite file (WAL)' : 'turnchart, SQLite :memory:',
    short: onDisk ? 'turnchart file' : 'turnchart memory',
    kind: 'turnchart',
    persistent: onDisk,
    dbPath,
    sqlite: rootRequire('better-sqlite3'),
    async init() {
      const engine = await createEngine({ database: dbPath ?? ':memory:', model: await aiSdkModel(baseURL), tools: await aiSdkTools() })
      Object.assign(this, turnchartCalls(engine))
    },
  }
}

/**
 * A turnchart engine's part of the system interface: sessions, a turn that hands each delta of
 * its session to `onDelta` (from engine.subscribe) and fails unless it completed, close.
 */
export function turnchartCalls(engine) {
  const listeners = new Map()
  engine.subscribe((event) => {
    if (event.type === 'part.delta') listeners.get(event.sessionId)?.(event.delta)
  })
  return {
    async newSession() {
      return { id: (await engine.createSession()).id }
    },
    async turn(session, prompt, onDelta) {
      listeners.set(session.id, onDelta)
      try {
        const result = await engine.prompt(session.id, prompt).done
        if (result.outcome !== 'completed') throw new Error(`turnchart: turn ${result.outcome}: ${JSON.stringify(result.error)}`)
      } finally {
        listeners.delete(session.id)
      }
    },
    async close() {
      await engine.close()
    },
  }
}

export const SYSTEM_NAMES = ['floor', 'doStream', 'hand', 'stopWhen', 'agent', 'langgraph', 'tc-file', 'tc-memory']

/** Creates the systems (all, or the named ones), in a fixed order. */
export async function createSystems(options, names = SYSTEM_NAMES) {
  const make = {
    floor: () => floor(options),
    doStream: () => doStreamLoop(options),
    hand: () => handLoop(options),
    stopWhen: () => stopWhenLoop(options),
    agent: () => toolLoopAgent(options),
    langgraph: () => langGraph(options),
    'tc-file': () => turnchart(options, true),
    'tc-memory': () => turnchart(options, false),
  }
  const systems = []
  for (const id of names) {
    const system = await make[id]()
    system.id = id
    await system.init?.()
    systems.push(system)
  }
  return systems
}
