/** turnchart's version, from the package.json above this file (in src/ or in dist/). */
import fs from 'node:fs'
import path from 'node:path'

export function packageVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json')
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'turnchart' && pkg.version) return pkg.version
    }
    if (path.dirname(dir) === dir) return 'unknown'
  }
}
