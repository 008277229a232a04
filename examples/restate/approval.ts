/**
 * A turn with an approval, run on Restate: `npm run example:restate` (Node 22; it installs
 * restate-server from npm the first time, into test/restate).
 *
 * It starts a local restate-server (its own ports and data, in a temporary folder), serves
 * turnchart's Restate service (`createRestateService`) on 127.0.0.1, registers it, then does
 * through Restate's ingress what an app would: a prompt whose tool needs approval, the status
 * until the turn waits, the approval, the turn's result. The model is turnchart's scripted
 * server unless TURNCHART_BASE_URL (and TURNCHART_MODEL, TURNCHART_API_KEY) name a provider.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http2 from 'node:http2'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import * as restate from '@restatedev/restate-sdk'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createRestateService } from '../../src/restate'
import { startScriptedServer } from '../../src/testing'

const restateServerBin = process.env.RESTATE_SERVER ?? path.resolve(__dirname, '../../test/restate/node_modules/.bin/restate-server')

const tools = {
  refund: tool({
    description: 'Refund an order (needs a person to approve)',
    inputSchema: z.object({ order: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: async ({ order, amount }) => `refunded ${amount} on ${order}`,
  }),
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-restate-example-'))
  const providerURL = process.env.TURNCHART_BASE_URL || undefined
  const scripted = providerURL ? undefined : await startScriptedServer()
  scripted?.tool('refund', { order: 'A-17', amount: 40 }, { id: 'call_refund' }).text('Refunded 40 on order A-17.')
  const model = createOpenAICompatible({ name: 'provider', baseURL: providerURL ?? scripted!.url, apiKey: process.env.TURNCHART_API_KEY ?? 'none' })(process.env.TURNCHART_MODEL ?? 'scripted')

  const [ingressPort, adminPort, nodePort, servicePort] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
  const ingress = `http://127.0.0.1:${ingressPort}`
  const admin = `http://127.0.0.1:${adminPort}`
  const server = spawn(restateServerBin, ['--base-dir', path.join(dir, 'restate'), '--bind-address', `127.0.0.1:${nodePort}`], {
    env: { ...process.env, RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`, RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`, RESTATE_LOG_FILTER: 'error' },
    stdio: 'ignore',
  })
  const agent = createRestateService({ database: { file: path.join(dir, 'agent.db'), driver: 'node:sqlite' }, model, tools })
  const endpoint = http2.createServer(restate.createEndpointHandler({ services: [agent] }))
  try {
    await new Promise<void>((resolve) => endpoint.listen(servicePort, '127.0.0.1', resolve))
    await until(async () => (await fetch(`${admin}/health`).catch(() => undefined))?.ok)
    await post(`${admin}/deployments`, { uri: `http://127.0.0.1:${servicePort}` })
    await until(async () => (await fetch(`${ingress}/restate/health`).catch(() => undefined))?.ok)

    const session = 'support-1'
    const { invocationId } = (await post(`${ingress}/turnchart/${session}/prompt/send`, 'Refund order A-17, 40 euros.')) as { invocationId: string }
    const waiting = (await until(async () => {
      const status = (await post(`${ingress}/turnchart/${session}/status`, null)) as { state?: string }
      return status.state === 'awaiting-approval' ? status : undefined
    })) as { turnId: string; state: string }
    console.log(`turn ${waiting.turnId} waits in ${waiting.state}: approving call_refund through Restate's ingress`)
    await post(`${ingress}/turnchart/${session}/approve`, { callId: 'call_refund', by: 'example' })
    const result = (await (await fetch(`${ingress}/restate/invocation/${invocationId}/attach`)).json()) as { outcome: string; text: string }
    console.log(`${result.outcome}: ${result.text}`)
  } finally {
    await agent.close()
    endpoint.close()
    // (its folder is removed once it has exited: it writes there until then)
    await stop(server)
    await scripted?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

async function post(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await response.text()
  if (!response.ok) throw new Error(`${url}: ${response.status} ${text}`)
  return text ? JSON.parse(text) : undefined
}

/** Resolves with `check`'s first truthy answer, looking every 100 ms for up to 30 s. */
async function until<T>(check: () => Promise<T | undefined | false>): Promise<T> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const value = await check().catch(() => undefined)
    if (value) return value
  }
  throw new Error('timed out waiting for Restate')
}

/** Stops restate-server (SIGTERM, SIGKILL after 10 s) and resolves once it has exited. */
function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const kill = setTimeout(() => server.kill('SIGKILL'), 10_000)
    server.once('exit', () => {
      clearTimeout(kill)
      resolve()
    })
    server.kill('SIGTERM')
  })
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
