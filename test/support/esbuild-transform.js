/**
 * Jest's transform: esbuild compiles each TypeScript file (and the ES modules jest must load as
 * CommonJS, such as @statelyai/inspect) on its own, types removed, with an inline source map so
 * stack traces name the source lines. Types are checked once by `npm run typecheck`, which
 * `npm test` runs first. Against ts-jest (which transpiled each file too), a cold run of
 * test/turn, test/llm and test/inspect took 21.6 s of CPU instead of 35.9 s.
 * `jest.mock` is not hoisted above imports (no test uses it; `jest.doMock` needs no hoisting).
 */
const crypto = require('node:crypto')
const path = require('node:path')
const esbuild = require('esbuild')

const loaders = { '.ts': 'ts', '.mts': 'ts', '.cts': 'ts', '.js': 'js', '.mjs': 'js', '.cjs': 'js' }

module.exports = {
  process(sourceText, sourcePath) {
    const { code } = esbuild.transformSync(sourceText, {
      loader: loaders[path.extname(sourcePath)] ?? 'js',
      format: 'cjs',
      target: 'es2022',
      platform: 'node',
      sourcemap: 'inline',
      sourcefile: sourcePath,
      // `import()` becomes `require()`, as tsc's CommonJS emit makes it (jest's vm has no dynamic import)
      supported: { 'dynamic-import': false },
      // the same emit as tsc with the repository's tsconfig (ES2022: class fields defined)
      tsconfigRaw: { compilerOptions: { useDefineForClassFields: true, esModuleInterop: true } },
    })
    return { code }
  },
  getCacheKey(sourceText, sourcePath) {
    return crypto.createHash('sha1').update(esbuild.version).update('\0').update(sourcePath).update('\0').update(sourceText).digest('hex')
  },
}
