/**
 * The methods of the store contract (store.ts) as a value: what a foreign store is checked
 * for when it is given as `database`, so that a missing method is an option error at
 * `createEngine` rather than a TypeError in the middle of a turn. The types below fail to
 * compile when a method is added to the contract and not here.
 */
import type { ControlStore, MessageStore, QueueStore, SessionStore, Store, TransitionStore, TurnStore } from './store'

const sessions = ['insert', 'get', 'list', 'children', 'lock', 'setTitle', 'setRevertedTo', 'delete'] as const
const messages = ['upsert', 'upsertParts', 'list', 'exists', 'deleteAfter', 'assistantInfos'] as const
const turns = ['insert', 'children', 'childOfCall', 'descendants', 'update', 'checkFence', 'get', 'input', 'openOfSession', 'open', 'due', 'claim', 'renewLeases', 'release', 'setOptions', 'options', 'usages'] as const
const transitions = ['append', 'list', 'deleteFinished'] as const
const queue = ['insert', 'get', 'list', 'oldest', 'take', 'takeSteers', 'idleSessions'] as const
const controls = ['add', 'pending', 'handled', 'outcome'] as const

/** Every method of every aggregate, by aggregate. */
export const storeMethods = { sessions, messages, turns, transitions, queue, controls } as const

type Complete<Contract, Listed extends readonly unknown[]> = Exclude<keyof Contract, Listed[number]> extends never ? true : never
const complete: [
  Complete<SessionStore, typeof sessions>,
  Complete<MessageStore, typeof messages>,
  // (`nextDeadline` is a capability: without it, a parked turn's deadline waits for the next sweep)
  Complete<Omit<TurnStore, 'nextDeadline'>, typeof turns>,
  Complete<TransitionStore, typeof transitions>,
  // (`changeMark` is a capability: without it, the steers are read before every model call)
  Complete<Omit<QueueStore, 'changeMark'>, typeof queue>,
  Complete<ControlStore, typeof controls>,
  // (`spending` is a capability: a store without it is taken, each engine counting budgets itself;
  // so are `slots` and `schedules`: the options that need them are refused; and `circuits`: each
  // engine then keeps its models' circuits itself)
  Complete<Omit<Store, 'transaction' | 'spending' | 'slots' | 'schedules' | 'circuits'>, Array<keyof typeof storeMethods>>,
] = [true, true, true, true, true, true, true]
void complete

/**
 * The first method of the contract that `value` lacks (`'turns.claim'`, `'transaction'`), or
 * undefined when it has every one.
 *
 * @example
 * missingStoreMethod(new MemoryStore()) // undefined
 */
export function missingStoreMethod(value: object): string | undefined {
  const store = value as Record<string, unknown>
  if (typeof store.transaction !== 'function') return 'transaction'
  for (const [aggregate, methods] of Object.entries(storeMethods)) {
    const part = store[aggregate] as Record<string, unknown> | undefined
    for (const method of methods) if (typeof part?.[method] !== 'function') return `${aggregate}.${method}`
  }
  return undefined
}
