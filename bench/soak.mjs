// Launcher for bench/soak.cts (bench/ is an ES module package): compile it with ts-node, as CommonJS.
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } })
require('./soak.cts')
