/**
 * A child process killed right after a human-in-the-loop input was stored, before its turn
 * used it (issue 25's point 5):
 * - `steer`: while its tool runs, the turn is steered (`engine.steer` resolved: the message is
 *   stored); SIGKILL before the step boundary that would take it.
 * - `edit`: a call waiting for approval is approved with an edited input (`engine.approve`
 *   resolved: the approval is stored); SIGKILL before the tool returns.
 * It reports its session over IPC. The tools never return in the child (`TURNCHART_CHILD`).
 * Usage: node steer-kill-child.js <db> <baseURL> <steer|edit>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'
import { hitlTools } from './hitl-tools'

const die = () => process.kill(process.pid, 'SIGKILL')

async function main() {
  const [database, baseURL, mode] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({ database, model, tools: hitlTools, editableApprovals: ['book'], flushIntervalMs: 10_000, recovery: { onOpen: false, intervalMs: 0 } })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.subscribe((event) => {
    if (mode === 'steer' && event.type === 'turn.transition' && event.to === 'tool-running') {
      void engine.steer(session.id, 'also check the tests').then(die)
    }
    if (mode === 'edit' && event.type === 'approval.requested') {
      void engine.approve(event.turnId, event.calls[0].callId, { input: { room: 'small' } }).then(die)
    }
  })
  engine.prompt(session.id, mode === 'steer' ? 'read the notes' : 'book a room')
}

if (require.main === module) void main()
