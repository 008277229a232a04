/**
 * The host contract's cases (test/support/host-contract.ts) on turnchart's own engines, which
 * hold their turns with leases, and on the test's queue host (queue-host.ts), each over real
 * child processes paused with SIGSTOP (Restate runs them in test/restate).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkChild, type TestChild } from '../support/child-process'
import { modelFor } from '../support/harness'
import { staleRunIsFenced, type StaleRunRig } from '../support/host-contract'

jest.setTimeout(60_000)

let dir: string
let model: ScriptedServer
const children: TestChild[] = []
let reader: Engine | undefined

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-host-contract-'))
  fs.writeFileSync(path.join(dir, 'side-effects.log'), '')
  model = await startScriptedServer()
})
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL')
    await child.exited
  }
  await reader?.close()
  reader = undefined
  await model.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const database = () => path.join(dir, 'agent.db')

async function start(script: string, args: string[]): Promise<TestChild> {
  const child = forkChild(path.join(__dirname, script), args, { ...process.env, TURNCHART_SIDE_EFFECTS: path.join(dir, 'side-effects.log') })
  children.push(child)
  await child.waitFor((m) => m.type === 'ready', 30_000)
  return child
}

/** The rig over two processes of one host: `first` runs the prompt, `second` (started by `runElsewhere`) runs it again. */
function rigOf(first: TestChild, startSecond: () => Promise<TestChild>): StaleRunRig {
  return {
    model,
    reader: async () => (reader ??= await createEngine({ database: database(), model: modelFor(model), recovery: { onOpen: false, intervalMs: 0 } })),
    sideEffects: () => fs.readFileSync(path.join(dir, 'side-effects.log'), 'utf8').split('\n').filter(Boolean),
    async startFirst() {
      first.process.send({ type: 'prompt', sessionId: 's1', input: 'send a note' })
      return (await first.waitFor((m) => m.type === 'delta')).turnId!
    },
    pauseFirst: () => void first.process.kill('SIGSTOP'),
    resumeFirst: () => void first.process.kill('SIGCONT'),
    async runElsewhere(turnId) {
      const second = await startSecond()
      await second.waitFor((m) => m.type === 'delta' && m.turnId === turnId, 30_000)
    },
    firstLost: async (turnId) => (await first.waitFor((m) => m.type === 'lost' && m.turnId === turnId, 30_000)).error,
  }
}

test("turnchart's own engines: an engine paused past its lease loses the turn to another engine's sweep, and is refused once it runs again", async () => {
  // Leases of 1.5 s, so the second engine's sweep (every 200 ms) takes the turn soon after the first one stops renewing.
  const engine = () => start('engine-child.ts', [database(), model.url, '1500', '200'])
  await staleRunIsFenced(rigOf(await engine(), engine))
})

test("the test's queue host: a host process paused while another, started on the same journal, runs the turn again; the paused one is refused once it runs again", async () => {
  const host = () => start('queue-host-child.ts', [database(), path.join(dir, 'journal.jsonl'), model.url])
  await staleRunIsFenced(rigOf(await host(), host))
})
