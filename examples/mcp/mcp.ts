/**
 * MCP tools with turnchart's guarantees: a real MCP server (@modelcontextprotocol/sdk's
 * McpServer over Streamable HTTP on 127.0.0.1), an engine that owns its connection (the `mcp`
 * option), and one turn whose model reads a page (a read-only tool of a trusted server: no
 * approval) and then deploys (a destructive tool: it waits for approval and runs once after it).
 * The model is turnchart's scripted server, so it runs offline.
 *
 * Run: npx ts-node --transpile-only examples/mcp/mcp.ts
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { z } from 'zod'
import { createEngine, MemoryStore } from '../../src'
import { startScriptedServer } from '../../src/testing'

/** The MCP server: one server and transport per request (stateless Streamable HTTP). */
async function startMcpServer(token: string): Promise<{ url: string; deploys: string[]; close(): Promise<void> }> {
  const deploys: string[] = []
  const server = http.createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end()
    if (req.headers.authorization !== `Bearer ${token}`) return void res.writeHead(401).end()
    const mcp = new McpServer({ name: 'site', version: '1.0.0' })
    mcp.registerTool('read_page', { description: 'Read a page of the site', inputSchema: { path: z.string() }, annotations: { readOnlyHint: true } }, async ({ path }) => ({
      content: [{ type: 'text', text: `# ${path}\nAll systems go.` }],
    }))
    mcp.registerTool('deploy', { description: 'Deploy the site', inputSchema: { env: z.string() }, annotations: { destructiveHint: true } }, async ({ env }) => {
      deploys.push(env)
      return { content: [{ type: 'text', text: `deployed to ${env}` }] }
    })
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.on('close', () => void transport.close())
    await mcp.connect(transport)
    await transport.handleRequest(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    deploys,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}

/** Runs the example; returns what it prints. */
export async function runMcpExample(): Promise<string[]> {
  const lines: string[] = []
  const token = 'example-token-not-stored'
  const site = await startMcpServer(token)
  const model = await startScriptedServer() // stands in for your model's endpoint
  model.tool('read_page', { path: '/status' }, { id: 'call_read' })
  model.tool('deploy', { env: 'production' }, { id: 'call_deploy' })
  model.text('Read the status page and deployed.')
  const engine = await createEngine({
    database: new MemoryStore(),
    model: createOpenAICompatible({ name: 'local', baseURL: model.url })('m'),
    mcp: {
      servers: {
        // trust: the app trusts this server's annotations (read_page is read-only: no approval, safe to re-run)
        site: { transport: { type: 'http', url: site.url, headers: { Authorization: `Bearer ${token}` } }, trust: true },
      },
    },
  })
  try {
    lines.push(`tools: ${Object.keys(engine.config.tools).join(', ')}`)
    engine.subscribe((event) => {
      if (event.type === 'approval.requested') {
        for (const call of event.calls) {
          lines.push(`approval asked: ${call.tool} ${JSON.stringify(call.input)}`)
          void engine.approve(event.turnId, call.callId)
        }
      }
    })
    const session = await engine.createSession()
    const done = await engine.prompt(session.id, 'Check the status page, then deploy').done
    for (const part of (await engine.messages(session.id)).flatMap((m) => m.parts)) {
      if (part.type === 'tool' && part.state.status === 'completed') lines.push(`${part.tool}: ${(part.state.output as { content: Array<{ text: string }> }).content[0].text.split('\n')[0]}`)
    }
    lines.push(`outcome: ${done.outcome}; deploys: ${site.deploys.length}`)
  } finally {
    await engine.close()
    await model.close()
    await site.close()
  }
  return lines
}

if (require.main === module) {
  runMcpExample().then(
    (lines) => console.log(lines.join('\n')),
    (error: unknown) => {
      console.error(error)
      process.exitCode = 1
    },
  )
}
