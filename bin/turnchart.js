#!/usr/bin/env node
/**
 * The `turnchart` command. In the package it runs the build (dist/). In this repository it
 * runs the build when there is one (`npm run build`), and the sources through ts-node
 * otherwise, so `npx turnchart` works right after `npm install`.
 *
 * Why a file of its own rather than a bin pointing into dist/: `npx turnchart` in this
 * repository installs the repository itself into npm's npx cache (a link) and links its bins
 * there once; a bin whose file is missing at that moment (no build yet) is never linked, and
 * the command stays "not found" after a build. This file always exists.
 */
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const built = path.join(root, 'dist/cjs/src/cli/main.js')

function loadCli() {
  if (fs.existsSync(built)) return require(built)
  try {
    require('ts-node').register({ transpileOnly: true, project: path.join(root, 'tsconfig.json') })
  } catch (error) {
    if (error && error.code === 'MODULE_NOT_FOUND') {
      process.stderr.write('turnchart: no build (dist/) and no ts-node to run the sources: run `npm run build` (or `npm install`) first\n')
      process.exit(1)
    }
    throw error
  }
  return require(path.join(root, 'src/cli/main.ts'))
}

loadCli().main()
