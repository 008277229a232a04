/**
 * Call stacks of the project's own code, for the walks in docs/architecture.md
 * (test/architecture/walks.test.ts).
 *
 * A V8 stack shows the synchronous callers and, with async stack traces, the `await`ers above
 * them; it ends where the work was handed to the event loop (a timer, `setImmediate`, a
 * promise's `then`). `traceTimers()` carries the stack across the first two: each
 * `setTimeout`/`setImmediate` records where it was armed, in an `AsyncLocalStorage` that the
 * callback runs in, so a stack captured later continues with the stack of the code that armed the
 * timer, and so on back. A `then` callback (the write queue's job, XState's resolution of a
 * promise) is not followed: a stack continues across it only when the callback's code
 * `await`s.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import path from 'node:path'

/** One frame of ours: its file (relative to the repository) and function. */
export interface Frame {
  file: string
  fn: string
  /** V8 resumed it after an `await` (it is waiting, not calling). */
  async: boolean
}

/** Frames of one synchronous-or-awaited stretch, innermost first, and what started it. */
export interface Segment {
  /** How this stretch began: `'captured'` (where the stack was taken) or the hop that led to it. */
  via: string
  frames: Frame[]
}

interface Cause {
  via: string
  frames: Frame[]
  parent: Cause | undefined
}

const root = path.resolve(__dirname, '../..')
const causes = new AsyncLocalStorage<Cause>()

/** Our frames only: `src/` (but the scripted server, the far end of the wire) and `machines/`. */
function ours(file: string | null | undefined): string | undefined {
  if (!file) return undefined
  const relative = path.relative(root, file.startsWith('file://') ? new URL(file).pathname : file).split(path.sep).join('/')
  if (!/^(src|machines)\//.test(relative) || relative.startsWith('src/testing/')) return undefined
  return relative
}

function nameOf(site: NodeJS.CallSite): string {
  const fn = site.getFunctionName()
  if (!fn) return '(anonymous)'
  const type = site.isToplevel() ? null : site.getTypeName()
  // `Object` is what V8 calls an object literal's type: it says nothing.
  return type && type !== 'Object' && !fn.includes('.') ? `${type}.${fn}` : fn
}

/** The stack here (without `above`'s frame and what it called), reduced to our frames. */
export function ourFrames(above: (...args: never[]) => unknown = ourFrames): Frame[] {
  const limit = Error.stackTraceLimit
  const prepare = Error.prepareStackTrace
  Error.stackTraceLimit = Infinity
  Error.prepareStackTrace = (_error, sites) => sites
  try {
    const holder: { stack?: NodeJS.CallSite[] } = {}
    Error.captureStackTrace(holder, above)
    const frames: Frame[] = []
    for (const site of holder.stack ?? []) {
      const file = ours(site.getFileName())
      if (file) frames.push({ file, fn: nameOf(site), async: site.isAsync() })
    }
    return frames
  } finally {
    Error.prepareStackTrace = prepare
    Error.stackTraceLimit = limit
  }
}

/** The stack here and, hop by hop, the stacks that armed the timers that led here. */
export function captureSegments(): Segment[] {
  const segments: Segment[] = [{ via: 'captured', frames: ourFrames(captureSegments) }]
  for (let cause = causes.getStore(); cause; cause = cause.parent) segments.push({ via: cause.via, frames: cause.frames })
  return segments
}

/**
 * Runs `fn` as if called across a hop named `via`: a stack captured in what it starts continues
 * with the stack here (for a call whose promise V8's async stack traces lose, e.g. a provider's
 * `doStream` raced against an abort signal).
 */
export function acrossHop<T>(via: string, fn: () => T): T {
  return causes.run({ via, frames: ourFrames(acrossHop), parent: causes.getStore() }, fn)
}

/**
 * Makes `setTimeout` and `setImmediate` remember where they were armed, until the returned
 * function restores them.
 */
export function traceTimers(): () => void {
  const global = globalThis as { setTimeout: typeof setTimeout; setImmediate: typeof setImmediate }
  const original = { setTimeout: global.setTimeout, setImmediate: global.setImmediate }
  const traced = (via: string, fn: (...args: unknown[]) => void) => {
    const cause: Cause = { via, frames: ourFrames(traced), parent: causes.getStore() }
    return (...args: unknown[]) => causes.run(cause, fn, ...args)
  }
  global.setTimeout = Object.assign(
    (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => original.setTimeout(traced('setTimeout', fn), ms, ...args),
    original.setTimeout,
  ) as typeof setTimeout
  global.setImmediate = Object.assign(
    (fn: (...args: unknown[]) => void, ...args: unknown[]) => original.setImmediate(traced('setImmediate', fn), ...args),
    original.setImmediate,
  ) as typeof setImmediate
  return () => Object.assign(global, original)
}
