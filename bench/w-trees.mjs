// Run trees (issue 24): what a tree of turns costs against one turn of the same steps. A parent
// turn hands three questions, one per step, to an `agentTool` sub-agent (three child turns, each
// of three steps: two tool calls, then its answer), then answers: 4 + 3 × 3 = 13 model calls. The
// flat turn makes the same 13 model calls with the same deltas in one turn (12 tool calls, then
// the answer). Both run on a SQLite file of their own, interleaved round by round, against the
// same scripted server (bench/server.mjs; every lane must get exactly its scripted calls).
//
// What a tree adds: three more turns (their rows, transition logs, user and assistant messages,
// child sessions), the wait of the parent's call for its child, and a child's start (its chart,
// its store reads). Time: median ms per turn (a tree counts as one turn: the parent's prompt to
// its end). Bytes: file growth per turn after a WAL checkpoint, and the rows written.
//
//   runTrees({ server, dir, rounds, warmup, log }) -> { flat, tree, ratio, bytesRatio, ... }
//   treesTargets(result) -> [{ target, measured, met }] (run.mjs's TargetResult; information only)
//   renderTrees(result) -> a Markdown section
//
// Standalone (after `npm run build`): node bench/w-trees.mjs   (BENCH_TREE_ROUNDS, default 15)
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { aiSdkModel, aiSdkTools, turnchartEntry, TOOL_NAME } from './systems.mjs'
import { expectModelCalls, fmtBytes, fmtMs, measureDb, RootDatabase, startServer, stats } from './lib.mjs'

const CHILDREN = 3
const CHILD_STEPS = 3
const DELTAS = 200
const PARENT_STEPS = CHILDREN + 1
const CALLS = PARENT_STEPS + CHILDREN * CHILD_STEPS

const text = (n) => Array.from({ length: DELTAS }, (_, i) => ({ text: `tok${(i + n) % 100} ` }))
const toolStep = (n, name, input) => ({ type: 'stream', chunks: [...text(n), { tool: { name, input } }] })
const answer = (n) => ({ type: 'stream', chunks: text(n) })

/** The replies of one tree: the parent's lane, and each child's (named in the call's input, so the child's prompt carries it). */
function treeScripts(lane) {
  const children = Array.from({ length: CHILDREN }, (_, c) => `${lane}-c${c}`)
  const parent = [...children.map((child, c) => toolStep(c, 'research', { lane: child })), answer(CHILDREN)]
  const child = (c) => [...Array.from({ length: CHILD_STEPS - 1 }, (_, s) => toolStep(c * 10 + s, TOOL_NAME, { n: s })), answer(c * 10 + CHILD_STEPS)]
  return { parent, children: children.map((id, c) => ({ id, replies: child(c) })) }
}

/** The flat turn: the same number of model calls and deltas, every step but the last a tool call. */
const flatScript = () => [...Array.from({ length: CALLS - 1 }, (_, s) => toolStep(s, TOOL_NAME, { n: s })), answer(CALLS)]

async function engineOn(file, baseURL) {
  const { createEngine, agentTool } = await import(turnchartEntry('index.mjs'))
  const { jsonSchema } = await import('ai')
  const research = agentTool({
    description: 'Research a question with a sub-agent',
    inputSchema: jsonSchema({ type: 'object', properties: { lane: { type: 'string' } }, required: ['lane'] }),
    toPrompt: ({ lane }) => `lane:${lane} research it`,
    tools: [TOOL_NAME],
  })
  return createEngine({ database: file, model: await aiSdkModel(baseURL), tools: { ...(await aiSdkTools()), research } })
}

/** Rows per table of a file, summed over turnchart's tables. */
const rowsOf = (measured) => Object.entries(measured.rows).filter(([name]) => name.startsWith('turnchart_') && name !== 'turnchart_migrations').reduce((sum, [, n]) => sum + n, 0)

export async function runTrees({ server, dir, rounds = 15, warmup = 3, log = () => {} }) {
  const files = { flat: path.join(dir, 'trees-flat.db'), tree: path.join(dir, 'trees-tree.db') }
  const engines = { flat: await engineOn(files.flat, server.url), tree: await engineOn(files.tree, server.url) }
  const times = { flat: [], tree: [] }
  const before = {}
  try {
    for (let round = 0; round < warmup + rounds; round++) {
      if (round === warmup) for (const kind of ['flat', 'tree']) before[kind] = measureDb(files[kind], RootDatabase)
      // Alternate which goes first, so neither always runs on a warmer process.
      for (const kind of round % 2 ? ['tree', 'flat'] : ['flat', 'tree']) {
        const engine = engines[kind]
        const lane = `trees-${kind}-${round}`
        const scripts = kind === 'tree' ? treeScripts(lane) : { parent: flatScript(), children: [] }
        await server.fill(lane, scripts.parent)
        for (const child of scripts.children) await server.fill(child.id, child.replies)
        const session = await engine.createSession()
        const start = performance.now()
        const turn = engine.prompt(session.id, `lane:${lane} round ${round}`)
        const result = await turn.done
        const ms = performance.now() - start
        if (result.outcome !== 'completed') throw new Error(`run trees bench, ${kind}: the turn ended ${result.outcome}: ${JSON.stringify(result.error)}`)
        await expectModelCalls(server, { workload: 'run trees', system: kind, lane, expected: kind === 'tree' ? PARENT_STEPS : CALLS, drop: true })
        for (const child of scripts.children) await expectModelCalls(server, { workload: 'run trees', system: 'child', lane: child.id, expected: CHILD_STEPS, drop: true })
        if (kind === 'tree') {
          const children = await engine.childTurns(turn.id)
          if (children.length !== CHILDREN) throw new Error(`run trees bench: ${children.length} child turns, expected ${CHILDREN}`)
        }
        if (round >= warmup) times[kind].push(ms)
      }
      log(`run trees: round ${round + 1}/${warmup + rounds}`)
    }
  } finally {
    await engines.flat.close()
    await engines.tree.close()
  }
  const after = { flat: measureDb(files.flat, RootDatabase), tree: measureDb(files.tree, RootDatabase) }
  const per = (kind) => ({
    ms: stats(times[kind]),
    bytes: (after[kind].bytes - before[kind].bytes) / rounds,
    payload: after[kind].payload !== undefined && before[kind].payload !== undefined ? (after[kind].payload - before[kind].payload) / rounds : undefined,
    rows: (rowsOf(after[kind]) - rowsOf(before[kind])) / rounds,
  })
  const flat = per('flat')
  const tree = per('tree')
  return {
    shape: { children: CHILDREN, childSteps: CHILD_STEPS, parentSteps: PARENT_STEPS, calls: CALLS, deltas: DELTAS, rounds, warmup },
    flat,
    tree,
    ratio: tree.ms.median / flat.ms.median,
    bytesRatio: tree.payload !== undefined && flat.payload ? tree.payload / flat.payload : tree.bytes / flat.bytes,
  }
}

export function treesTargets(result) {
  return [
    {
      target: 'a parent with three children against one turn of the same 13 model calls (information, no target)',
      measured: `${result.ratio.toFixed(2)}× the time (${fmtMs(result.tree.ms.median)} ms / ${fmtMs(result.flat.ms.median)} ms), ${result.bytesRatio.toFixed(2)}× the bytes`,
      met: null,
    },
  ]
}

export function renderTrees(result) {
  const { shape, flat, tree } = result
  const row = (name, r) => `| ${name} | ${fmtMs(r.ms.median)} | ${fmtMs(r.ms.p99)} | ${fmtBytes(r.bytes)} | ${r.payload !== undefined ? fmtBytes(r.payload) : '–'} | ${r.rows.toFixed(0)} |`
  return [
    '## Run trees: a parent with three children',
    '',
    `A parent turn hands ${shape.children} questions, one per step, to an \`agentTool\` sub-agent (${shape.children} child turns of ${shape.childSteps} steps: ${shape.childSteps - 1} tool calls, then the answer), then answers: ${shape.calls} model calls in 4 turns. Against it, one turn of the same ${shape.calls} model calls (${shape.calls - 1} tool calls, then the answer), every reply ${shape.deltas} text deltas. Each on a SQLite file of its own, interleaved round by round against the same scripted server; ${shape.warmup} warm-up rounds, ${shape.rounds} measured. Time: the parent's \`prompt()\` to its end. Bytes: file growth per turn after a WAL checkpoint (page-granular); payload: growth of the live rows' bytes (dbstat); rows: rows added to turnchart's tables per turn. Code: bench/w-trees.mjs.`,
    '',
    '| system | median ms/turn | p99 ms | file bytes/turn | payload/turn | rows/turn |',
    '|---|---|---|---|---|---|',
    row(`one turn, ${shape.calls} steps`, flat),
    row(`a parent and ${shape.children} children`, tree),
    '',
    `The tree takes **${result.ratio.toFixed(2)}×** the flat turn's time and **${result.bytesRatio.toFixed(2)}×** its bytes: three more turns' rows, logs and messages, and each child's start and end.`,
    '',
  ].join('\n')
}

// Standalone: node bench/w-trees.mjs
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-trees-'))
  const server = await startServer()
  try {
    const result = await runTrees({ server, dir, rounds: Number(process.env.BENCH_TREE_ROUNDS ?? 15), log: (line) => console.error(line) })
    console.log(renderTrees(result))
  } finally {
    server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
