/**
 * Stored text is shown, never run, by the viewer (issue 26's threat table): a model answer, a
 * tool error and a session title holding HTML and script are rendered as text in headless
 * Chromium (the page builds its DOM from text nodes only). Skipped, saying so, where
 * /usr/bin/chromium is absent outside CI.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { chromium, type BrowserContext } from 'playwright-core'
import { z } from 'zod'
import { startViewer, type Viewer } from '../../src/viewer/viewer-server'
import { createHarness, type Harness } from '../support/harness'
import { chromiumBinary, testNeeding } from '../support/requires'

const binary = chromiumBinary()
const { executablePath } = binary
const browserTest = testNeeding(binary)

let h: Harness | undefined
let viewer: Viewer | undefined
let context: BrowserContext | undefined
let profile: string | undefined
afterEach(async () => {
  await context?.close()
  await viewer?.close()
  await h?.close()
  if (profile) fs.rmSync(profile, { recursive: true, force: true })
})

browserTest('HTML and script in stored answers, tool errors and titles are shown as text', async () => {
  const answer = `<img src=x onerror="document.title='pwned-by-answer'"><script>document.title='pwned-by-script'</script>`
  const breaks = tool({
    description: 'breaks',
    inputSchema: z.object({}),
    execute: async (): Promise<string> => {
      throw new Error(`<img src=y onerror="document.title='pwned-by-tool'">`)
    },
  })
  h = await createHarness({ tools: { breaks } })
  const session = await h.engine.createSession({ id: 'chat-xss', title: `<svg onload="document.title='pwned-by-title'"></svg>` })
  h.server.tool('breaks', {})
  h.server.text(answer)
  await h.engine.prompt(session.id, 'hi').done
  viewer = await startViewer({ database: h.dbPath })
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-chromium-'))
  context = await chromium.launchPersistentContext(profile, { executablePath, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] })
  const page = context.pages()[0] ?? (await context.newPage())
  await page.goto(`${viewer.url}#/session/chat-xss`)
  await page.locator('main .part-text').last().waitFor()
  expect(await page.title()).not.toMatch(/pwned/)
  expect(await page.locator('main img, main script, main svg[onload], nav img, nav script, nav svg[onload]').count()).toBe(0)
  expect(await page.locator('main').textContent()).toContain(answer)
  expect(await page.locator('main').textContent()).toContain(`<img src=y onerror="document.title='pwned-by-tool'">`)
  expect(await page.locator('nav#sessions').textContent()).toContain(`<svg onload="document.title='pwned-by-title'"></svg>`)
}, 60_000)
