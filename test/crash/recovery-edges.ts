/**
 * The chart edges that only a crash and a recovery take. test/crash/recovery.test.ts walks
 * each with a real child process and fails if one was not observed in a persisted log; the
 * model-based transition suite (test/model) counts them as walked there.
 */
export const recoveryTestFile = 'test/crash/recovery.test.ts'

export const recoveryEdges = [
  'streaming --turn.crashed--> interrupted',
  'tool-running --turn.crashed--> interrupted',
  'retry-waiting --turn.crashed--> interrupted',
  'compacting --turn.crashed--> interrupted',
  'interrupted --turn.recover [interruptedWhileStreaming]--> streaming',
  'interrupted --turn.recover [interruptedWhileRunningTools]--> tool-running',
  'interrupted --turn.recover [interruptedWhileWaiting]--> retry-waiting',
  'interrupted --turn.recover [interruptedWhileCompacting]--> compacting',
  'interrupted --turn.abort--> aborted',
]
