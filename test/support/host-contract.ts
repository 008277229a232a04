/**
 * The host contract's cases, run by every way of hosting turns (turnchart's own engines with
 * their leases, Restate, the test's queue host): each host gives a rig over its real processes,
 * and the case checks what a user would see (the turn's row, its rows, the tools' side effects,
 * the model's requests).
 */
import type { Engine } from '../../src'
import type { ScriptedServer } from '../../src/testing'
import { finalTextOf } from '../../src/turn/turn-result'
import { until } from './restate'

/** A host's processes as the stale-run case drives them. */
export interface StaleRunRig {
  model: ScriptedServer
  /** An engine of turnchart's own on the host's database (reads only). */
  reader(): Promise<Engine>
  sideEffects(): string[]
  /** Prompts 'send a note' in session `s1` on the first process; resolves with the turn's id once that process streams it. */
  startFirst(): Promise<string>
  /** SIGSTOP and SIGCONT of the first process. */
  pauseFirst(): void
  resumeFirst(): void
  /** Has the host run the turn again in a second process; resolves once that process streams it. */
  runElsewhere(turnId: string): Promise<void>
  /** Resolves with the name of the error the first process lost the turn with (its `turn.lost`). */
  firstLost(turnId: string): Promise<string | undefined>
}

/**
 * A stale run is fenced: the process running a turn is paused (alive, holding what it held)
 * inside its model call while the host runs the turn again in another process, which claims it
 * (its epoch goes up, read from the row). Resumed while the new run streams, the old process's
 * next write is refused (`TurnOwnershipLostError`): nothing of it is stored, and the tool call its
 * stream ends with is never run by it.
 */
export async function staleRunIsFenced(rig: StaleRunRig): Promise<void> {
  const [oldStream, newStream] = [gate(), gate()]
  const call = (to: string) => ({ tool: { name: 'send', input: { to }, id: `call_${to}` } })
  rig.model.push({ type: 'stream', chunks: [{ text: 'sending to ' }, call('old')], holdBefore: { chunk: 1, until: oldStream.opened } })
  rig.model.push({ type: 'stream', chunks: [{ text: 'sending to ' }, call('new')], holdBefore: { chunk: 1, until: newStream.opened } })
  rig.model.text('sent to new')
  const turnId = await rig.startFirst()
  const reader = await rig.reader()
  const before = (await reader.getTurn(turnId))!.epoch!

  rig.pauseFirst()
  await rig.runElsewhere(turnId)
  expect((await reader.getTurn(turnId))!.epoch).toBeGreaterThan(before)
  const transitions = await reader.transitions(turnId)

  // The old run wakes inside its model call, and its stream goes on: its step ends with a call
  // of `send`, whose rows it must write before the tool runs.
  rig.resumeFirst()
  oldStream.open()
  expect(await rig.firstLost(turnId)).toBe('TurnOwnershipLostError')
  expect(await reader.transitions(turnId)).toEqual(transitions)

  newStream.open()
  const ended = await until(`turn ${turnId} to end`, async () => (await reader.getTurn(turnId))?.outcome ?? undefined)
  const messages = (await reader.messages('s1')).filter((m) => m.info.turnId === turnId)
  expect({ outcome: ended, text: finalTextOf(messages) }).toEqual({ outcome: 'completed', text: 'sent to new' })
  expect(JSON.stringify(messages)).not.toContain('call_old')
  expect(rig.sideEffects()).toEqual(['sent to new'])
  expect(rig.model.calls).toBe(3)
}

/** A promise the test opens when it chooses. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}
