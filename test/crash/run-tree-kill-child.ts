/**
 * A child process whose prompt runs a parent → child → grandchild tree (agent tools), and that
 * SIGKILLs itself at one point of the tree: `child-streaming` (the parent waits in tool-running,
 * the child streams its answer), `child-approval` (the child waits for an approval), or
 * `grandchild-tool` (the grandchild runs a tool). The next engine resumes the tree.
 * `child-streaming-budget`: as `child-streaming`, under a budget of 8 output tokens over the tree.
 * Usage: node run-tree-kill-child.js <database> <baseURL> <point>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { agentTool, createEngine } from '../../src'

const die = () => process.kill(process.pid, 'SIGKILL')

/** The tree's tools; `onSlow` runs inside the grandchild's tool. */
export function treeTools(onSlow?: () => void) {
  return {
    researcher: agentTool({ description: 'The researcher', inputSchema: z.object({ task: z.string() }), tools: ['fact', 'deploy'], toPrompt: ({ task }) => task }),
    fact: agentTool({ description: 'The fact finder', inputSchema: z.object({ task: z.string() }), tools: ['lookup'], toPrompt: ({ task }) => task }),
    lookup: tool({
      description: 'Look a fact up (slow)',
      inputSchema: z.object({ q: z.string() }),
      execute: async ({ q }) => {
        onSlow?.()
        return `found ${q}`
      },
    }),
    deploy: tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => `deployed to ${env}` }),
  }
}

async function main() {
  const [database, baseURL, point] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({
    database,
    model,
    flushIntervalMs: 10_000,
    recovery: { onOpen: false, intervalMs: 0 },
    tools: treeTools(point === 'grandchild-tool' ? die : undefined),
    ...(point.endsWith('-budget') ? { budget: { tokens: { output: 8 } } } : {}),
  })
  engine.subscribe((event) => {
    if (point.startsWith('child-streaming') && event.type === 'part.delta' && event.parentTurnId !== undefined) die()
    if (point === 'child-approval' && event.type === 'approval.requested') die()
  })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(session.id, 'go')
}

if (require.main === module) void main()
