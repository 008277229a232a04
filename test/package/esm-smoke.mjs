// Runs one turn through the built package from an ES module.
import { createEngine } from 'turnchart'
import { startScriptedServer } from 'turnchart/testing'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
const server = await startScriptedServer()
server.text('hello from esm')
const model = createOpenAICompatible({ name: 'x', baseURL: server.url, includeUsage: true })('m')
const engine = await createEngine({ model })
const session = await engine.createSession()
const result = await engine.prompt(session.id, 'hi').done
const [, a] = await engine.messages(session.id)
console.log(JSON.stringify({ outcome: result.outcome, text: a.parts.find((p) => p.type === 'text').text }))
await engine.close(); await server.close()
