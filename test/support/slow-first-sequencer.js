/**
 * Jest's order, with the suites that take longest started first. In a fresh clone (CI) Jest has
 * no timings yet and orders by file size, which started the package test (~100 s: npm pack and
 * three fresh apps) near the end, where it ran alone on one worker while the other had finished.
 * Started first, it runs beside the rest. The list is short and by measure (a CI run's slowest
 * suites); any suite not in it keeps Jest's own order.
 */
const Sequencer = require('@jest/test-sequencer').default

const slowFirst = ['test/package/pack.test.ts', 'test/browser/viewer-page.test.ts', 'test/restate/restate-service.test.ts', 'test/browser/chat-page.test.ts', 'test/hostile/providers.test.ts', 'test/docs/doc-examples.test.ts']

const rank = (test) => {
  const index = slowFirst.findIndex((file) => test.path.endsWith(file))
  return index === -1 ? slowFirst.length : index
}

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    // Jest's order first (timings when it has them), then the known slow suites moved to the front.
    return [...super.sort(tests)].sort((a, b) => rank(a) - rank(b))
  }
}

module.exports = SlowFirstSequencer
