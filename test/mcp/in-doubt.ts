/**
 * Waits for a turn whose MCP call's outcome is unknown: either it ends (the call an error part,
 * an engine without calls in doubt), or it waits in `awaiting-calls` (its leaf `call-in-doubt`) (the call `'in-doubt'`):
 * then the test settles the call with `resolveCall({ error })` and the turn ends. Either way the
 * call was not re-sent; the caller counts the server's calls.
 */
import type { Engine, Turn } from '../../src'

/** Subscribe before the fault: resolves once `turn` ended, settling a call in doubt on the way. */
export function endDespiteDoubt(engine: Engine, sessionId: string): { ended(turn: Turn): Promise<'ended' | 'in-doubt'> } {
  let waiting: ((callIds: string[]) => void) | undefined
  const inDoubt = new Promise<string[]>((resolve) => (waiting = resolve))
  const off = engine.subscribe((event) => {
    if (event.type === 'turn.transition' && event.sessionId === sessionId && (event.to === 'awaiting-calls' || event.to === 'call-in-doubt')) {
      void engine.messages(event.sessionId).then((messages) => {
        const ids = messages.flatMap((m) => m.parts).flatMap((p) => (p.type === 'tool' && (p.state.status as string) === 'in-doubt' ? [p.callId] : []))
        waiting?.(ids)
      })
    }
  })
  return {
    async ended(turn) {
      const first = await Promise.race([turn.done.then(() => 'ended' as const, () => 'ended' as const), inDoubt])
      if (first === 'ended') {
        off()
        return 'ended'
      }
      const resolveCall = (engine as unknown as { resolveCall(turnId: string, callId: string, result: { error: string }): Promise<unknown> }).resolveCall
      for (const callId of first) await resolveCall.call(engine, turn.id, callId, { error: 'settled by the test' })
      await turn.done.catch(() => undefined)
      off()
      return 'in-doubt'
    },
  }
}
