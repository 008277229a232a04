/**
 * The engine's calls on stored turns: a turn's row, its transition log and its replay, a
 * session's persisted status, and pruning old logs. Store work only; `createEngine` composes them.
 */
import type { TurnInput } from '../../machines/turn.types'
import { readStatus } from '../control/read-status'
import type { Engine } from './create-engine'
import type { EngineCall } from './engine-calls'
import { InvalidArgumentError, TurnNotFoundError } from '../core/errors/errors'
import { requireId } from '../core/arguments'
import type { Repository } from '../store/repository'
import { replayTransitions } from '../turn/replay'

export type TurnLogCalls = Pick<Engine, 'transitions' | 'getTurn' | 'replay' | 'prune' | 'readStatus'>

/**
 * @example
 * const engine = { ...turnLogCalls({ repo, requireOpen, call }), ... }
 */
export function turnLogCalls({ repo, requireOpen, call }: { repo: Repository; requireOpen(operation: string): void; call: EngineCall }): TurnLogCalls {
  return {
    readStatus: (sessionId) => call('read a session status', () => readStatus(repo, requireId('sessionId', sessionId))),
    transitions: (turnId) =>
      call('read transitions', async () => {
        requireId('turnId', turnId)
        if (!(await repo.getTurn(turnId))) throw new TurnNotFoundError(turnId)
        return repo.transitions(turnId)
      }),
    getTurn: (turnId) => call('get a turn', async () => repo.getTurn(requireId('turnId', turnId))),
    replay: (turnId) =>
      call('replay a turn', async () => {
        requireId('turnId', turnId)
        const input = (await repo.turnInput(turnId)) as TurnInput | undefined
        if (!input) throw new TurnNotFoundError(turnId)
        return replayTransitions(input, await repo.transitions(turnId)).steps
      }),
    async prune(options) {
      requireOpen('prune transition logs')
      if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { olderThan }')
      const { olderThan } = options
      const before = olderThan instanceof Date ? olderThan.getTime() : olderThan
      if (typeof before !== 'number' || !Number.isFinite(before)) throw new InvalidArgumentError('olderThan', olderThan, 'a Date or a time in ms')
      return call('prune transition logs', () => repo.deleteFinishedTransitions(before))
    },
  }
}
