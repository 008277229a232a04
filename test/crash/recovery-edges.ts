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
