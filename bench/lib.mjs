// Shared helpers: the server child process, scripts, statistics, SQLite measurements.
import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import Database from 'better-sqlite3'
import { TOOL_NAME, TOOL_RESULT } from './systems.mjs'

/** Forks server.mjs and talks to it over IPC. */
export async function startServer() {
  const child = fork(new URL('./server.mjs', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const pending = new Map()
  let seq = 0
  const url = await new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)))
    child.on('message', (message) => {
      if (message.ready) return resolve(message.url)
      const waiter = pending.get(message.id)
      if (!waiter) return
      pending.delete(message.id)
      if (message.error) waiter.reject(new Error(message.error))
      else waiter.resolve(message)
    })
  })
  const call = (message) =>
    new Promise((resolve, reject) => {
      const id = ++seq
      pending.set(id, { resolve, reject })
      child.send({ ...message, id })
    })
  return {
    url,
    pid: child.pid,
    fill: (lane, replies) => call({ cmd: 'fill', lane, replies }),
    count: (lane) => call({ cmd: 'count', lane }),
    drop: (lane) => call({ cmd: 'drop', lane }),
    stats: () => call({ cmd: 'stats' }),
    close() {
      child.removeAllListeners('exit')
      child.disconnect()
    },
  }
}

/**
 * A system made other model calls than its script holds (one per step): its time would not be
 * the same work as the others', so the run stops instead of publishing it.
 */
export class ModelCallMismatchError extends Error {
  name = 'ModelCallMismatchError'
  constructor({ workload, system, lane, expected, calls, pending }) {
    super(`${workload}, ${system}, lane ${lane}: ${calls} model calls, expected ${expected}${pending ? ` (${pending} scripted replies left unused)` : ''}`)
    Object.assign(this, { workload, system, lane, expected, calls, pending })
  }
  static isInstance(error) {
    return error instanceof Error && error.name === 'ModelCallMismatchError'
  }
}

/**
 * Checks that `lane` received exactly `expected` model calls since its last fill and used every
 * scripted reply; with `drop`, also closes the lane. Throws ModelCallMismatchError otherwise.
 */
export async function expectModelCalls(server, { workload, system, lane, expected, drop = false }) {
  const { calls, pending } = drop ? await server.drop(lane) : await server.count(lane)
  if (calls !== expected || pending !== 0) throw new ModelCallMismatchError({ workload, system, lane, expected, calls, pending })
  return calls
}

/** Workload 1's turn: 10 steps of 400 deltas (run.mjs, and profile.mjs for its profiles). */
export const W1_SCRIPT = { steps: 10, deltas: 400 }

/** One step's reply: `deltas` text deltas, then (if `toolCall`) one tool call. */
export function stepReply({ deltas, toolCall, n = 0, marker = false, delayMs }) {
  const chunks = []
  for (let i = 0; i < deltas; i++) chunks.push({ text: marker ? '@T@ ' : `tok${i % 100} ` })
  if (toolCall) chunks.push({ tool: { name: TOOL_NAME, input: { n } } })
  return { type: 'stream', chunks, ...(delayMs ? { delayMs } : {}) }
}

/** A turn of `steps` steps: every step but the last calls the tool. */
export function turnScript({ steps, deltas, marker = false, delayMs }) {
  const replies = []
  for (let s = 0; s < steps; s++) replies.push(stepReply({ deltas, toolCall: s < steps - 1, n: s, marker, delayMs }))
  return replies
}

/**
 * A turn's own content in bytes (UTF-8): the prompt, the text the model streamed, each tool
 * call's input and each tool's 1 KB result. What a store must keep of the turn whatever its
 * layout (the PostgreSQL bytes target is a multiple of it).
 */
export function turnContentBytes(script, prompt = '') {
  let bytes = Buffer.byteLength(prompt)
  for (const reply of script) {
    for (const chunk of reply.chunks) {
      if (chunk.text) bytes += Buffer.byteLength(chunk.text)
      if (chunk.tool) bytes += Buffer.byteLength(JSON.stringify(chunk.tool.input)) + Buffer.byteLength(TOOL_RESULT)
    }
  }
  return bytes
}

export function stats(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  const mid = sorted.length >> 1
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
  return { n: sorted.length, median, min: sorted[0], max: sorted[sorted.length - 1], p99: at(0.99), mean: values.reduce((a, b) => a + b, 0) / values.length }
}

/** The better-sqlite3 that turnchart's dist/ loads (the root's copy). */
export const RootDatabase = createRequire(new URL('../package.json', import.meta.url))('better-sqlite3')

/**
 * Checkpoints the WAL (TRUNCATE) from a separate connection; returns file size and row counts.
 * `Sqlite` must be the same better-sqlite3 copy as the connection that writes the file: two
 * SQLite libraries in one process do not see each other's POSIX locks, and closing the
 * second one would delete the first one's WAL under it.
 */
export function measureDb(file, Sqlite = Database) {
  const db = new Sqlite(file)
  try {
    db.pragma('busy_timeout = 5000')
    db.pragma('wal_checkpoint(TRUNCATE)')
    const tables = db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all()
    const rows = {}
    for (const { name } of tables) rows[name] = db.prepare(`select count(*) as n from "${name}"`).get().n
    let payload
    try {
      payload = db.prepare('select sum(payload) as p from dbstat').get().p
    } catch {
      payload = undefined
    }
    return { bytes: fs.statSync(file).size, rows, totalRows: Object.values(rows).reduce((a, b) => a + b, 0), payload }
  } finally {
    db.close()
  }
}

/**
 * Counts write statements (INSERT/UPDATE/DELETE/REPLACE) and the rows they changed, per
 * database file, for both copies of better-sqlite3 (turnchart's, from the root, and the
 * bench's, used by LangGraph's checkpointer).
 */
export const writeCounts = new Map() // file -> { statements, rows }
export function instrumentWrites() {
  const copies = [Database, RootDatabase]
  for (const Copy of copies) {
    const probe = new Copy(':memory:')
    const proto = Object.getPrototypeOf(probe.prepare('select 1'))
    probe.close()
    if (proto.__benchCounted) continue
    proto.__benchCounted = true
    for (const method of ['run', 'all']) {
      const original = proto[method]
      proto[method] = function counted(...args) {
        const result = original.apply(this, args)
        if (/^\s*(insert|update|delete|replace)/i.test(this.source)) {
          const file = this.database.name
          const count = writeCounts.get(file) ?? { statements: 0, rows: 0 }
          count.statements += 1
          count.rows += method === 'run' ? result.changes : result.length
          writeCounts.set(file, count)
        }
        return result
      }
    }
  }
}

export const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2))
export const fmtBytes = (b) => (b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${b} B`)
