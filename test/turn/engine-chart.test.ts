/**
 * The engine's chart (src/turn/turn-actors.ts `EngineChart`): provided once, its actors act for
 * the turn their input names among the turns bound to it. Observed through the step gate, the
 * chart's first actor: a turn whose handoff was asked holds there (its handoff point is reached),
 * which says which turn's binding the actor found; a turn bound to no engine fails, naming why.
 */
import { createActor, waitFor } from 'xstate'
import { EngineChart, type TurnRun } from '../../src/turn/turn-actors'
import { HandoffPoint } from '../../src/turn/handoff-point'

const input = (turnId: string) => ({ turnId, sessionId: 'ses_1', autoCompact: false, maxCompactions: 0 })
const committed = { committed: async () => true }

/** A turn whose step gate holds at once (its handoff was asked): the gate's rules are not read. */
function handingOff(turnId: string): { run: TurnRun; handoff: HandoffPoint; held: () => boolean } {
  const handoff = new HandoffPoint()
  handoff.request()
  let held = false
  void handoff.reached.then(() => (held = true))
  return { run: { scope: { turnId }, tree: {}, handoff } as unknown as TurnRun, handoff, held: () => held }
}

test("the step gate acts for the turn its input names, among the chart's bound turns", async () => {
  const chart = new EngineChart()
  const one = handingOff('turn_1')
  const two = handingOff('turn_2')
  chart.bind(two.run, committed)
  chart.bind(one.run, committed)
  const actor = createActor(chart.machine, { input: input('turn_2') }).start()
  actor.send({ type: 'turn.start' })
  await two.handoff.reached
  expect(one.held()).toBe(false)
  expect(actor.getSnapshot().value).toEqual({ running: 'step-gate' })
  actor.stop()
})

test('a turn bound to no engine fails at its first actor, naming why; nothing acts', async () => {
  const chart = new EngineChart()
  const other = handingOff('turn_other')
  chart.bind(other.run, committed)
  const actor = createActor(chart.machine, { input: input('turn_unbound') }).start()
  actor.send({ type: 'turn.start' })
  const done = await waitFor(actor, (snapshot) => snapshot.status === 'done')
  expect(done.value).toBe('failed')
  expect(done.context.error?.message).toMatch(/the step gate failed: no turn 'turn_unbound' runs in this engine/)
  expect(other.held()).toBe(false)
})

test("a turn bound again replaces its binding; the first binding's release leaves the second be; its own release unbinds it", async () => {
  const chart = new EngineChart()
  const first = handingOff('turn_1')
  const second = handingOff('turn_1')
  const releaseFirst = chart.bind(first.run, committed)
  const releaseSecond = chart.bind(second.run, committed)
  releaseFirst()
  const actor = createActor(chart.machine, { input: input('turn_1') }).start()
  actor.send({ type: 'turn.start' })
  await second.handoff.reached
  expect(first.held()).toBe(false)
  actor.stop()

  releaseSecond()
  const after = createActor(chart.machine, { input: input('turn_1') }).start()
  after.send({ type: 'turn.start' })
  const done = await waitFor(after, (snapshot) => snapshot.status === 'done')
  expect(done.context.error?.message).toMatch(/no turn 'turn_1' runs in this engine/)
})
