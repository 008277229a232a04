// Launcher for bench/delta-cost.cts (bench/ is an ES module package): compiled with ts-node, as CommonJS.
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } })
require('./delta-cost.cts')
