/**
 * runTools through its port (`ToolRunScope`), with a small fake in place of the turn: no
 * engine, no database, no model.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { runTools, type ToolRunScope } from '../../src/tools/run-tools'
import type { Part, ToolPart } from '../../src/core/types'
import { StateExit } from '../../src/core/state-exit'

function fakeScope(tools: ToolRunScope['config']['tools'], calls: Array<{ tool: string; input: unknown }>) {
  const changed: Part[] = []
  const stepTools: ToolPart[] = calls.map((c, i) => ({
    id: `prt_${i}`,
    sessionId: 'ses_1',
    messageId: 'msg_1',
    type: 'tool',
    callId: `call_${i}`,
    tool: c.tool,
    state: { status: 'running', input: c.input, time: { start: 1 } },
  }))
  const scope: ToolRunScope = {
    turnId: 'trn_1',
    sessionId: 'ses_1',
    messages: { stepTools, modelMessages: () => [] },
    config: {
      tools,
      toolExecution: { concurrency: 2, timeoutMs: 1_000, maxOutputBytes: 1_000 },
      telemetry: { toolCall: () => undefined },
      redactor: { text: (s: string) => s },
    },
    writer: { changed: (part) => changed.push(part) },
  }
  return { scope, stepTools, changed }
}

test('each running call becomes completed or error, in call order; the writer is told of each', async () => {
  const seen: Array<{ sessionId: unknown; turnId: unknown }> = []
  const tools = {
    echo: tool({
      description: 'Echo',
      inputSchema: z.object({ say: z.string() }),
      execute: async ({ say }, options) => {
        seen.push({ sessionId: (options as { sessionId?: unknown }).sessionId, turnId: (options as { turnId?: unknown }).turnId })
        return say
      },
    }),
    boom: tool({
      description: 'Throws',
      inputSchema: z.object({}),
      execute: async (): Promise<string> => {
        throw new Error('it broke')
      },
    }),
  }
  const { scope, stepTools, changed } = fakeScope(tools, [
    { tool: 'echo', input: { say: 'hi' } },
    { tool: 'boom', input: {} },
    { tool: 'missing', input: {} },
  ])
  await runTools(scope, new StateExit())
  expect(stepTools.map((p) => p.state.status)).toEqual(['completed', 'error', 'error'])
  expect(stepTools[0].state).toMatchObject({ output: 'hi', time: { start: 1 } })
  expect(stepTools[1].state).toMatchObject({ error: 'it broke' })
  expect(stepTools[2].state).toMatchObject({ error: expect.stringContaining("unknown tool 'missing'") })
  expect(changed.map((p) => p.id).sort()).toEqual(['prt_0', 'prt_1', 'prt_2'])
  expect(seen).toEqual([{ sessionId: 'ses_1', turnId: 'trn_1' }])
})

test('an aborted turn leaves its calls to the turn\'s end (nothing written here)', async () => {
  const exit = new StateExit()
  const tools = { wait: tool({ description: 'Waits', inputSchema: z.object({}), execute: () => new Promise<string>(() => {}) }) }
  const { scope, stepTools, changed } = fakeScope(tools, [{ tool: 'wait', input: {} }])
  const running = runTools(scope, exit)
  exit.leave(new Error('stop'))
  await running
  expect(stepTools[0].state.status).toBe('running')
  expect(changed).toEqual([])
})
