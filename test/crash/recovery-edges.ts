/**
 * The chart edges that only a crash and a recovery take. test/crash/recovery.test.ts walks
 * each with a real child process and fails if one was not observed in a persisted log; the
 * model-based transition suite (test/model) counts them as walked there.
 */
export const recoveryTestFile = 'test/crash/recovery.test.ts'

export const recoveryEdges = [
  // written once for `running`; recovery.test.ts crashes it in streaming, tool-running, retry-waiting and compacting
  'running --turn.crashed--> interrupted',
  // a crash in streaming: that step was closed, a new one starts (through the step gate)
  'interrupted --turn.recover [restartsStep]--> step-gate',
  // back into the leaf the crash interrupted, through the deep history of `running`
  'interrupted --turn.recover--> running.history',
  'interrupted --turn.abort--> aborted',
]

export const handoffTestFile = 'test/crash/handoff.test.ts'

/**
 * The chart edges that only a handoff (`close({ handoff: true })`) takes: the tools' actor
 * leaves the step gate undecided and the turn holds at `step-gate`. test/crash/handoff.test.ts
 * walks it with a real child process and fails when its persisted log lacks the row.
 */
export const handoffEdges = ['tool-running --tools.finished--> step-gate']
