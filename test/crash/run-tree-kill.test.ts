/**
 * Durable run trees: a real child process runs a parent → child (→ grandchild) tree and is
 * SIGKILLed at one of three points: the parent waiting in tool-running while its child streams,
 * the child awaiting an approval, the grandchild running a tool. The next engine on the same
 * database (SQLite, and PostgreSQL when a server is there) resumes the tree: each resumed agent
 * tool call finds its existing child by call id and waits for it, so every call has exactly one
 * child, none is lost, and the parent completes with its child's text as the tool's output.
 */
import Database from 'better-sqlite3'
import { InsertQueryNode, Kysely, SqliteDialect, TableNode, UpdateQueryNode, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs } from 'kysely'
import fs from 'node:fs'
import path from 'node:path'
import { runUntilKilled } from '../support/child-process'
import { createEngine, type Engine, type ToolPart } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath, withParams } from '../support/harness'
import { testOn } from '../support/requires'
import { treeTools } from './run-tree-kill-child'

jest.setTimeout(60_000)

let server: ScriptedServer
beforeEach(async () => {
  server = await startScriptedServer()
})
afterEach(async () => {
  await server.close()
})

for (const dialect of ['sqlite', 'postgres'] as const) {
  testOn(dialect)(`${dialect}: a tree resumed after a crash counts what it spent before it against its budget (read once from the rows)`, async () => {
    const db = database(dialect)
    // Budget: 8 output tokens. Before the kill the parent's first call spent 5; after it the
    // child's call (admitted: 5 < 8) spends 5 more, so the parent's next call is refused (10 >= 8).
    server.tool('researcher', { task: 'capital' }, { id: 'call_p' })
    server.push({ type: 'stream', chunks: [{ text: 'Par' }], end: 'hang' })
    let engine: Engine | undefined
    try {
      await runChildUntilKilled(db.url, 'child-streaming-budget')
      server.text('Paris is the capital.')
      server.text('never asked for')
      const requestsBefore = server.requests.length
      engine = await createEngine({ database: db.url, model: modelFor(server), tools: treeTools(), recovery: { onOpen: false, intervalMs: 0 }, controlPollIntervalMs: 50 })
      const recovered = await engine.recover()
      const rows = await Promise.all(recovered.map((t) => engine!.getTurn(t.id)))
      const parent = recovered[rows.findIndex((row) => !row?.parentTurnId)]
      const result = await parent.done
      expect(result.outcome).toBe('failed')
      expect(result.error).toMatchObject({ name: 'BudgetExceededError', limit: 'tokens.output', max: 8, reached: 10, turnId: parent.id })
      expect(server.requests.length - requestsBefore).toBe(1)
      expect((await engine.childTurns(parent.id)).map((t) => t.outcome)).toEqual(['completed'])
    } finally {
      await engine?.close()
      await db.drop()
    }
  })
}

/** A fresh database of `dialect` and its removal. */
function database(dialect: 'sqlite' | 'postgres'): { url: string; drop(): Promise<void> } {
  if (dialect === 'postgres') {
    const schema = freshSchemaName()
    return { url: withParams(pgBaseUrl, { schema }), drop: () => dropSchemas(schema) }
  }
  const file = tempDbPath()
  return { url: file, drop: async () => fs.rmSync(path.dirname(file), { recursive: true, force: true }) }
}

function runChildUntilKilled(url: string, point: string): Promise<void> {
  return runUntilKilled(path.join(__dirname, 'run-tree-kill-child.ts'), [url, server.url, point], point)
}

/** What the scripted provider answers, before the kill and after it, at each point. */
const scripts: Record<string, { before(): void; after(): void; depth: number }> = {
  'child-streaming': {
    depth: 1,
    before: () => {
      server.tool('researcher', { task: 'capital' }, { id: 'call_p' })
      server.push({ type: 'stream', chunks: [{ text: 'Par' }], end: 'hang' })
    },
    after: () => {
      server.text('Paris is the capital.')
      server.text('Done: Paris.')
    },
  },
  'child-approval': {
    depth: 1,
    before: () => {
      server.tool('researcher', { task: 'deploy' }, { id: 'call_p' })
      server.tool('deploy', { env: 'prod' }, { id: 'call_d' })
    },
    after: () => {
      server.text('Deployed to prod.')
      server.text('Done: deployed.')
    },
  },
  'grandchild-tool': {
    depth: 2,
    before: () => {
      server.tool('researcher', { task: 'capital' }, { id: 'call_p' })
      server.tool('fact', { task: 'capital of France' }, { id: 'call_c' })
      server.tool('lookup', { q: 'capital' }, { id: 'call_g' })
    },
    after: () => {
      server.text('Paris')
      server.text('The capital is Paris.')
      server.text('Done: Paris.')
    },
  },
}

const cases = Object.keys(scripts).flatMap((point) => [
  ['sqlite', point],
  ['postgres', point],
]) as Array<['sqlite' | 'postgres', string]>

for (const [dialect, point] of cases) {
  testOn(dialect)(`${dialect}: killed at ${point}, the next engine resumes the tree: one child per call, the parent completes`, async () => {
    const db = database(dialect)
    const script = scripts[point]
    script.before()
    let engine: Engine | undefined
    try {
      await runChildUntilKilled(db.url, point)
      const requestsBefore = server.requests.length
      script.after()
      engine = await createEngine({ database: db.url, model: modelFor(server), tools: treeTools(), recovery: { onOpen: false, intervalMs: 0 }, controlPollIntervalMs: 50 })
      // The grandchild's own tool (not idempotent) was running: in doubt, its turn waits for a person.
      const inDoubt = new Promise<{ turnId: string; callId: string }>((resolve) => {
        engine!.subscribe((event) => {
          if (event.type === 'calls.waiting') resolve({ turnId: event.turnId, callId: event.calls[0].callId })
        })
      })
      const recovered = await engine.recover()
      expect(recovered).toHaveLength(script.depth + 1)
      if (point === 'grandchild-tool') {
        const call = await inDoubt
        // (it did not happen: the grandchild's model is told so)
        await engine.resolveCall(call.turnId, call.callId, { error: 'interrupted by a restart' })
      }
      const rows = await Promise.all(recovered.map((t) => engine!.getTurn(t.id)))
      const parent = recovered[rows.findIndex((row) => !row?.parentTurnId)]
      if (point === 'child-approval') {
        // The child's wait goes on in this engine, seen from the parent's session.
        const status = await engine.readStatus(parent.sessionId)
        expect(status).toMatchObject({ type: 'busy', turnId: parent.id, state: 'tool-running', approvals: [{ callId: 'call_d', tool: 'deploy' }] })
        const approval = (status as { approvals: Array<{ callId: string; turnId: string }> }).approvals[0]
        await engine.approve(approval.turnId, approval.callId)
      }
      const result = await parent.done
      expect(result.outcome).toBe('completed')
      expect(result.text).toBe(point === 'child-approval' ? 'Done: deployed.' : 'Done: Paris.')

      // Exactly one child per call, each completed, its text its parent's tool output.
      let level = [parent.id]
      const texts: Record<string, string> = { 'child-streaming': 'Paris is the capital.', 'child-approval': 'Deployed to prod.', 'grandchild-tool': 'The capital is Paris.' }
      for (let depth = 1; depth <= script.depth; depth++) {
        const children = await engine.childTurns(level[0])
        expect(children).toHaveLength(1)
        expect(children[0].outcome).toBe('completed')
        const parentRow = (await engine.getTurn(level[0]))!
        const call = (await engine.messages(parentRow.sessionId)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool' && p.callId === children[0].parentCallId)!
        expect(call.state.status).toBe('completed')
        if (depth === 1) expect(call.state).toMatchObject({ output: texts[point] })
        level = [children[0].id]
      }
      expect(await engine.childTurns(level[0])).toEqual([])
      if (point === 'grandchild-tool') {
        // The grandchild's own tool (not idempotent) was interrupted: in doubt, resolved as an error its model saw, not run twice.
        const grandchild = (await engine.getTurn(level[0]))!
        const lookup = (await engine.messages(grandchild.sessionId)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
        expect(lookup.state).toMatchObject({ status: 'error', error: 'interrupted by a restart' })
      }
      expect(await engine.listSessions({ children: true })).toHaveLength(script.depth + 1)
      // No call was made twice: the resumed calls found their children (only the interrupted step was asked again).
      expect(server.requests.length - requestsBefore).toBe(point === 'grandchild-tool' ? 3 : 2)
    } finally {
      await engine?.close()
      await db.drop()
    }
  })
}

/**
 * Counts the statements that start a turn: the lock of its session (a start's first write,
 * before the check that the session has no open turn) and the insert of its row. Counted as
 * the engine sends them, so a start refused afterwards counts too.
 */
class TurnStarts implements KyselyPlugin {
  count = 0
  transformQuery(args: PluginTransformQueryArgs) {
    const node = args.node
    if (InsertQueryNode.is(node) && node.into?.table.identifier.name === 'turnchart_turns') this.count++
    if (UpdateQueryNode.is(node) && node.table && TableNode.is(node.table) && node.table.table.identifier.name === 'turnchart_sessions') this.count++
    return node
  }
  async transformResult(args: PluginTransformResultArgs) {
    return args.result
  }
}

// The resumed call looks its child up by call id before starting one: a resume starts no turn.
// (Without the lookup, the child it starts is refused, its session busy with the existing child
// or the unique index on the call, and the call waits for the existing one anyway: the same
// tree, but a doomed start per resumed call, which the tests above cannot see.)
for (const point of ['child-streaming', 'grandchild-tool']) {
  test(`sqlite: killed at ${point}, the resumed tree starts no child for a call that has one (no turn start written)`, async () => {
    const db = database('sqlite')
    const script = scripts[point]
    script.before()
    const starts = new TurnStarts()
    let engine: Engine | undefined
    let kysely: Kysely<any> | undefined
    try {
      await runChildUntilKilled(db.url, point)
      script.after()
      const handle = new Database(db.url)
      handle.pragma('journal_mode = WAL')
      handle.pragma('foreign_keys = ON')
      kysely = new Kysely<any>({ dialect: new SqliteDialect({ database: handle }), plugins: [starts] })
      engine = await createEngine({ database: kysely, model: modelFor(server), tools: treeTools(), recovery: { onOpen: false, intervalMs: 0 }, controlPollIntervalMs: 50 })
      // The grandchild's own tool (not idempotent) was running: in doubt, its turn waits for a person.
      const inDoubt = new Promise<{ turnId: string; callId: string }>((resolve) => {
        engine!.subscribe((event) => {
          if (event.type === 'calls.waiting') resolve({ turnId: event.turnId, callId: event.calls[0].callId })
        })
      })
      const recovered = await engine.recover()
      expect(recovered).toHaveLength(script.depth + 1)
      if (point === 'grandchild-tool') {
        const call = await inDoubt
        // (it did not happen: the grandchild's model is told so)
        await engine.resolveCall(call.turnId, call.callId, { error: 'interrupted by a restart' })
      }
      const rows = await Promise.all(recovered.map((t) => engine!.getTurn(t.id)))
      expect((await recovered[rows.findIndex((row) => !row?.parentTurnId)].done).outcome).toBe('completed')
      expect(starts.count).toBe(0)
    } finally {
      await engine?.close()
      await kysely?.destroy()
      await db.drop()
    }
  })
}
