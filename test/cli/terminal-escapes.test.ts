/**
 * Stored text printed by the read commands cannot drive the terminal (issue 26's threat table):
 * a model answer, a tool error or a title holding escape sequences (clear the screen, write the
 * clipboard with OSC 52, move the cursor back over a line) is printed with those characters
 * shown as `\u001b`-style escapes. `--json` is JSON, whose strings escape them anyway.
 */
import fs from 'node:fs'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { runCli } from './run-cli'

let server: ScriptedServer
let dbPath: string
afterEach(async () => {
  await server?.close()
  if (dbPath) fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

test('show, sessions and replay print control characters of stored text as escapes, never raw', async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
  const hostile = 'clear\x1b[2J clipboard\x1b]52;c;ZWNobyBwd25lZA==\x07 back\r\x1b[1Aover \x9b31m'
  const fails = tool({
    description: 'fails',
    inputSchema: z.object({}),
    execute: async (): Promise<string> => {
      throw new Error(`tool says \x1b[31mred\x1b[0m`)
    },
  })
  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: { fails } })
  const session = await engine.createSession({ title: 'title \x1b]0;owned\x07' })
  server.tool('fails', {})
  server.text(hostile)
  const turn = engine.prompt(session.id, 'hi')
  await turn.done
  await engine.close()

  const runs = await Promise.all([runCli(['show', dbPath, session.id]), runCli(['sessions', dbPath]), runCli(['replay', dbPath, turn.id])])
  for (const run of runs) {
    expect(run.code).toBe(0)
    expect(run.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/) // NO_COLOR: no escape at all
  }
  const [show, sessions] = runs
  expect(show.stdout).toContain('clear\\u001b[2J clipboard\\u001b]52;c;ZWNobyBwd25lZA==\\u0007 back\\u000d\\u001b[1Aover \\u009b31m')
  expect(show.stdout).toContain('tool says \\u001b[31mred\\u001b[0m')
  expect(show.stdout).toContain('title \\u001b]0;owned\\u0007')
  expect(sessions.stdout).toContain('title \\u001b]0;owned\\u0007')
  // --json keeps the text exactly (JSON escapes it).
  const json = JSON.parse((await runCli(['show', dbPath, session.id, '--json'])).stdout)
  expect(json.messages[1].parts.some((p: { text?: string }) => p.text === hostile)).toBe(true)
}, 60_000)
