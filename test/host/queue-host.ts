/**
 * A host of turns written against the hosting seam alone (`src/host`, published as
 * `turnchart/host`): the proof that the seam is the whole contract. Each session's runs go one at
 * a time through an in-process queue; a turn's waits are awaited with the host's own wakes and
 * timers; its runs are journaled in a file, so that a host started again after a SIGKILL runs
 * again what had not ended (the new run claims the turn: the fence keeps an older run out).
 */
import fs from 'node:fs'
import { TurnOwnershipLostError } from '../../src'
import { HostedTurns, type EngineOptions, type HostedPrompt, type TurnPause } from '../../src/host'

/** A journal line: a run begun (its turn and what it runs), or a turn that ended. */
type Entry = { run: { sessionId: string; turnId: string; prompt: HostedPrompt } } | { ended: string }

/** Told of each pause of each run (an end among them). */
export type PauseListener = (sessionId: string, turnId: string, pause: TurnPause) => void

export class QueueHost {
  readonly turns: HostedTurns
  readonly #journal: string
  readonly #told: PauseListener
  /** Each session's queue: the promise of its last run. */
  readonly #queues = new Map<string, Promise<unknown>>()
  /** The wake of each session whose turn waits. */
  readonly #wakes = new Map<string, () => void>()

  private constructor(turns: HostedTurns, journal: string, told: PauseListener) {
    this.turns = turns
    this.#journal = journal
    this.#told = told
  }

  /** Opens the host on `journal` and runs again every run it holds that has not ended. */
  static async open(options: EngineOptions, journal: string, told: PauseListener): Promise<QueueHost> {
    const host = new QueueHost(await HostedTurns.open(options, { owner: 'test:queue-host' }), journal, told)
    const entries = fs.existsSync(journal) ? fs.readFileSync(journal, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Entry) : []
    const ended = new Set(entries.flatMap((entry) => ('ended' in entry ? [entry.ended] : [])))
    for (const entry of entries) {
      if ('run' in entry && !ended.has(entry.run.turnId)) host.#enqueue(entry.run.sessionId, entry.run.turnId, entry.run.prompt)
    }
    return host
  }

  /** Starts a turn of `sessionId` (after the session's runs before it); resolves with its id once it is journaled. */
  async prompt(sessionId: string, input: string): Promise<string> {
    const prompt = { input }
    const turnId = await this.turns.newTurn(sessionId, prompt)
    this.#write({ run: { sessionId, turnId, prompt } })
    this.#enqueue(sessionId, turnId, prompt)
    return turnId
  }

  async approve(sessionId: string, callId: string): Promise<void> {
    await this.turns.approve(sessionId, { callId })
    this.#wakes.get(sessionId)?.()
  }

  async abort(sessionId: string, reason: string): Promise<void> {
    const below = await this.turns.abort(sessionId, reason)
    for (const session of [sessionId, ...below]) this.#wakes.get(session)?.()
  }

  close(): Promise<void> {
    return this.turns.close()
  }

  #enqueue(sessionId: string, turnId: string, prompt: HostedPrompt): void {
    const next = (this.#queues.get(sessionId) ?? Promise.resolve()).then(() => this.#run(sessionId, turnId, prompt))
    this.#queues.set(sessionId, next.catch(() => undefined))
  }

  /** Runs the turn until it ends: each wait awaited here, each child run here, a failed run run again. */
  async #run(sessionId: string, turnId: string, prompt: HostedPrompt): Promise<void> {
    for (;;) {
      const pause = await this.turns.runUntilPause(sessionId, turnId, prompt).catch(async (error: unknown) => {
        // Another run took the turn (this process was paused, say): that run goes on, not this one.
        if (TurnOwnershipLostError.isInstance(error)) return 'taken' as const
        // (a run the host must run again: the database out, the turn not let go of yet)
        await new Promise((resolve) => setTimeout(resolve, 100))
        return undefined
      })
      if (pause === 'taken') return
      if (!pause) continue
      if (pause.kind === 'ended') this.#write({ ended: turnId })
      this.#told(sessionId, turnId, pause)
      if (pause.kind === 'ended') return
      if (pause.kind === 'children') await Promise.all(pause.children.map((child) => this.#run(child.sessionId, child.turnId, { turn: child.turnId })))
      else await this.#waitFor(sessionId, turnId, pause.deadline)
    }
  }

  /** Until a control wakes the session's turn or its deadline passes (a control stored before the wake was set is found at once). */
  async #waitFor(sessionId: string, turnId: string, deadline: number | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const woken = new Promise<void>((resolve) => {
      this.#wakes.set(sessionId, resolve)
      if (deadline !== undefined) timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))
    })
    if (!(await this.turns.hasPendingControl(turnId))) await woken
    clearTimeout(timer)
    this.#wakes.delete(sessionId)
  }

  #write(entry: Entry): void {
    fs.appendFileSync(this.#journal, `${JSON.stringify(entry)}\n`)
  }
}
