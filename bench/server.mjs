// The scripted OpenAI-compatible server, in its own process (forked by run.mjs).
//
// One front HTTP server on 127.0.0.1 dispatches each request to a "lane": a ScriptedServer
// from turnchart/testing with its own queue of replies. The lane is named in the
// conversation's first user message ("lane:<id>"), so every system, and every concurrent
// session, gets its own replies in order, whatever the interleaving of requests.
//
// In text, the marker "@T@" is replaced, at the moment the SSE chunk is written to the
// socket, by process.hrtime in microseconds (CLOCK_MONOTONIC, shared by all processes on the
// machine): the client reads it back to measure the delay from server to subscriber.
//
// IPC (process.send): { id, cmd: 'fill', lane, replies } -> { id, url }
//                     { id, cmd: 'count', lane }         -> { id, calls, pending }
//                     { id, cmd: 'drop', lane }          -> { id, calls, pending }
//                     { id, cmd: 'stats' }               -> { id, calls, unrouted, lanes, pending }
// `calls` of a lane: model requests since its last fill; `pending`: replies still queued. The
// bench checks both after every turn (every system must make exactly the scripted calls).
import http from 'node:http'
import { PassThrough } from 'node:stream'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const dist = process.env.TURNCHART_DIST ?? new URL('../dist', import.meta.url).pathname
const { startScriptedServer } = await import(pathToFileURL(path.join(dist, 'esm', 'testing.mjs')).href)

const MARK = '@T@'
const originalWrite = http.ServerResponse.prototype.write
http.ServerResponse.prototype.write = function write(chunk, ...rest) {
  if (typeof chunk === 'string' && chunk.includes(MARK)) {
    const now = String(process.hrtime.bigint() / 1000n)
    chunk = chunk.split(MARK).join(now)
  }
  return originalWrite.call(this, chunk, ...rest)
}

const lanes = new Map() // id -> ScriptedServer
let calls = 0
let unrouted = 0 // requests that named no known lane: a system sent something the bench did not script
const LANE = /lane:([A-Za-z0-9_.-]+)/

const front = http.createServer((req, res) => {
  const parts = []
  req.on('data', (part) => parts.push(part))
  req.on('end', () => {
    calls += 1
    const body = Buffer.concat(parts)
    const lane = lanes.get(LANE.exec(body.toString('utf8'))?.[1])
    if (!lane) {
      unrouted += 1
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'bench server: no lane in request', type: 'invalid_request_error' } }))
      return
    }
    // Hand the request to the lane's ScriptedServer as if it had arrived there.
    const replay = new PassThrough()
    Object.assign(replay, { method: req.method, url: req.url, headers: req.headers, socket: req.socket })
    lane.server.emit('request', replay, res)
    replay.end(body)
  })
})
front.keepAliveTimeout = 60_000

async function fill(id, replies) {
  let lane = lanes.get(id)
  if (!lane) {
    lane = await startScriptedServer()
    lanes.set(id, lane)
  }
  lane.requests.length = 0 // recorded bodies are not needed and the history grows
  lane.push(...replies)
  return lane
}

process.on('message', async (message) => {
  try {
    if (message.cmd === 'fill') {
      await fill(message.lane, message.replies)
      process.send({ id: message.id, url: url() })
    } else if (message.cmd === 'count') {
      process.send({ id: message.id, ...count(lanes.get(message.lane)) })
    } else if (message.cmd === 'drop') {
      const lane = lanes.get(message.lane)
      lanes.delete(message.lane)
      const counted = count(lane)
      if (lane) await lane.close()
      process.send({ id: message.id, ...counted })
    } else if (message.cmd === 'stats') {
      process.send({ id: message.id, calls, unrouted, lanes: lanes.size, pending: [...lanes.values()].reduce((n, l) => n + l.pending(), 0) })
    }
  } catch (error) {
    process.send({ id: message.id, error: String(error?.stack ?? error) })
  }
})
const count = (lane) => ({ calls: lane?.requests.length ?? 0, pending: lane?.pending() ?? 0 })

process.on('disconnect', () => process.exit(0))

const url = () => `http://127.0.0.1:${front.address().port}/v1`
front.listen(0, '127.0.0.1', () => process.send({ ready: true, url: url() }))
