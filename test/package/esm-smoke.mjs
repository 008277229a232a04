// Runs one turn through the built package from an ES module.
import { createEngine, MessageAbortedError } from 'turnchart'
import { startScriptedServer } from 'turnchart/testing'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
const server = await startScriptedServer()
server.text('hello from esm')
const model = createOpenAICompatible({ name: 'x', baseURL: server.url, includeUsage: true })('m')
const engine = await createEngine({ model })
const session = await engine.createSession()
const result = await engine.prompt(session.id, 'hi').done
const [, a] = await engine.messages(session.id)
// turn.done carries error instances: isInstance and instanceof work through the package.
const aborted = engine.prompt(session.id, 'again')
aborted.abort()
const { error } = await aborted.done
const errorValue = MessageAbortedError.isInstance(error) && error instanceof MessageAbortedError
console.log(JSON.stringify({ outcome: result.outcome, text: a.parts.find((p) => p.type === 'text').text, errorValue }))
await engine.close(); await server.close()
