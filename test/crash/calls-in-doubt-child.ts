/**
 * A child process whose turn calls a non-idempotent `charge` tool or a deferred `ci` tool, and
 * SIGKILLs itself: `in-charge` (inside `charge`'s execute, its side effect done), `deferred`
 * (once the turn's wait in `awaiting-deferred` is committed).
 * Usage: node -r ts-node/register/transpile-only calls-in-doubt-child.ts <database> <baseURL> <point>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, defer } from '../../src'

const die = () => process.kill(process.pid, 'SIGKILL')

/** The tools of both processes: `charge` (not idempotent), `ci` (deferred, `ciTimeoutMs` its deadline). */
export function doubtTools(onCharge?: () => void, ciTimeoutMs?: number) {
  return {
    charge: tool({
      description: 'Charge a card (not idempotent)',
      inputSchema: z.object({ cents: z.number() }),
      execute: async ({ cents }) => {
        onCharge?.()
        return `charged ${cents}`
      },
    }),
    ci: tool({ description: 'Run CI', inputSchema: z.object({}), execute: async () => defer(ciTimeoutMs ? { timeoutMs: ciTimeoutMs } : {}) }),
  }
}

async function main() {
  const [database, baseURL, point, timeout] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({ database, model, recovery: { onOpen: false, intervalMs: 0 }, tools: doubtTools(point === 'in-charge' ? die : undefined, timeout ? Number(timeout) : undefined) })
  engine.subscribe((event) => {
    if (point === 'deferred' && event.type === 'turn.transition' && event.to === 'awaiting-deferred') die()
  })
  const session = await engine.createSession()
  engine.prompt(session.id, 'go')
}

if (require.main === module) void main()
