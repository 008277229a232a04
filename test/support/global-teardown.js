/** Jest's global teardown: removes the run's temporary folder (test/support/global-setup.js). */
const fs = require('node:fs')

module.exports = async function globalTeardown() {
  if (process.env.TURNCHART_TEST_RUN) fs.rmSync(process.env.TURNCHART_TEST_RUN, { recursive: true, force: true })
}
