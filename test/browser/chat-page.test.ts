/**
 * The example chat page in a real browser: Debian's headless Chromium driven by playwright-core
 * against the example server (scripted model). A person's path through it: a prompt with
 * reasoning, a tool and a retry countdown; an approval; a stop; a reload mid-turn; a message
 * with an image and a text file attached; a message typed while a turn runs (it steers the
 * turn); a denial with the reason typed beside Deny; the retry countdown's first frame; and the
 * page at 360 px (nothing scrolls sideways, the buttons stay on screen), where a message sent
 * while an approval waits is kept across a reload, an approval's input is edited, a deferred call
 * is settled from the page, and Stop ends a turn that waits for approval.
 * The last screenshot is kept under test/browser/out/ (git-ignored).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { startChatExample, type ChatExample } from '../../examples/chat/server'
import { examplePrompts, storyText } from '../../examples/chat/script'
import { chromiumBinary, testNeeding } from '../support/requires'

const binary = chromiumBinary()
const { executablePath } = binary
const browserTest = testNeeding(binary)
const outDir = path.join(__dirname, 'out')

let app: ChatExample
let context: BrowserContext
let profile: string
afterAll(async () => {
  await context?.close()
  await app?.close()
  if (profile) fs.rmSync(profile, { recursive: true, force: true })
})

async function send(page: Page, text: string) {
  await page.getByTestId('prompt').fill(text)
  await page.getByTestId('send').click()
}

async function lastAssistantText(page: Page): Promise<string> {
  return page.locator('[data-testid=message-assistant]').last().locator('.text').allTextContents().then((t) => t.join(''))
}

/** Waits until the `index`th assistant message contains `text`. */
const assistant = (page: Page, index: number, text: string) =>
  page.locator('[data-testid=message-assistant]').nth(index).filter({ hasText: text }).waitFor()

const ready = (page: Page) => page.waitForSelector('[data-testid=status]:text-is("ready")')

/** The example server and one Chromium for this file's tests (started by the first that runs). */
async function start(): Promise<void> {
  if (context) return
  app = await startChatExample({ port: 0 })
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-chromium-'))
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 900, height: 1000 },
  })
}

browserTest(
  'the example page: streamed text, a tool result, a retry countdown, an approval, a stop, a reload mid-turn, attached files',
  async () => {
    await start()
    const page = context.pages()[0] ?? (await context.newPage())
    await page.goto(app.url)
    await page.getByTestId('prompt').waitFor()
    const chatId = new URL(page.url()).searchParams.get('chat')!

    // 1. Reasoning, streamed text, a tool result, and the retry countdown of a 429 (its first
    // frame, recorded as it is drawn: the wait the server asked for, 3 s, not more).
    await page.evaluate(() => {
      const w = globalThis as any
      new w.MutationObserver(() => {
        const shown = w.document.querySelector('[data-testid=retry]')
        if (shown && w.__firstRetry === undefined) w.__firstRetry = shown.textContent
      }).observe(w.document.body, { subtree: true, childList: true, characterData: true })
    })
    await send(page, examplePrompts.folder)
    await page.getByTestId('reasoning').first().waitFor()
    await page.locator('[data-testid=tool-list][data-tool-state=output-available]').waitFor()
    const retry = page.getByTestId('retry')
    await retry.waitFor()
    expect(await retry.textContent()).toMatch(/attempt 2 in \d+ s: .*Rate limit/)
    const firstFrame = Number(/in (\d+) s/.exec(await page.evaluate(() => String((globalThis as any).__firstRetry)))![1])
    expect(firstFrame).toBeGreaterThanOrEqual(1)
    expect(firstFrame).toBeLessThanOrEqual(3)
    expect(await page.locator('.state.current').textContent()).toBe('retry-waiting')
    fs.mkdirSync(outDir, { recursive: true })
    await page.screenshot({ path: path.join(outDir, 'retry.png') })
    await assistant(page, 0, 'The folder holds')
    await ready(page)
    expect(await page.locator('.state.current').textContent()).toBe('completed')
    expect(await lastAssistantText(page)).toMatch(/^Let me look at the folder\.The folder holds \d+ entries/)

    // 2. A tool that needs approval: the page's Approve button reaches engine.approve.
    await send(page, examplePrompts.deploy)
    await page.getByTestId('approve').waitFor()
    await page.screenshot({ path: path.join(outDir, 'approval.png') })
    await page.getByTestId('approve').click()
    await page.locator('[data-testid=tool-deploy][data-tool-state=output-available]').waitFor()
    await assistant(page, 1, 'live in production')
    await ready(page)

    // 3. A long answer stopped half way: the turn is aborted on the server.
    await send(page, examplePrompts.poem)
    await assistant(page, 2, 'token after token')
    const aborted = new Promise<void>((resolve) => {
      const off = app.engine.subscribe((e) => {
        if (e.type === 'session.error' && e.sessionId === chatId && e.error.name === 'MessageAbortedError') {
          off()
          resolve()
        }
      })
    })
    await page.getByTestId('stop').click()
    await aborted
    // The stream delivers the turn's end: the chart shows 'aborted' without a reload.
    await page.waitForSelector('.state.current:text-is("aborted")')
    await ready(page)
    const stopped = await app.engine.messages(chatId)
    expect(stopped.at(-1)!.info.error).toMatchObject({ name: 'MessageAbortedError' })

    // 4. A reload mid-turn: the page reattaches and the same turn continues to its end.
    await send(page, examplePrompts.story)
    await assistant(page, 3, 'another')
    const turnBefore = app.engine.activeTurn(chatId)!.id
    const partial = await lastAssistantText(page)
    expect(storyText.startsWith(partial)).toBe(true)
    expect(partial.length).toBeLessThan(storyText.length)
    await page.reload()
    await assistant(page, 3, 'The end.')
    await ready(page)
    expect(await lastAssistantText(page)).toBe(storyText) // no gap, no duplicate
    expect(await page.locator('[data-testid=message-assistant]').count()).toBe(4)
    expect((await app.engine.getTurn(turnBefore))!.outcome).toBe('completed')
    // The earlier turns came back from the database: the tool results and the stopped poem.
    expect(await page.locator('[data-testid=tool-list][data-tool-state=output-available]').count()).toBe(2)
    expect(await page.locator('[data-testid=tool-deploy][data-tool-state=output-available]').count()).toBe(1)
    expect(await page.getByTestId('message-error').textContent()).toMatch(/^MessageAbortedError/)

    // 5. Files: useChat's sendMessage({ text, files }) from the page's file input; the handler makes
    // them the prompt's image and file parts, the model receives them, and they come back on reload.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
    const notes = 'first line of the notes\nsecond line'
    await page.getByTestId('file').setInputFiles([
      { name: 'dot.png', mimeType: 'image/png', buffer: png },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(notes) },
    ])
    await send(page, 'What is in the attached files?')
    await assistant(page, 4, 'I received your files')
    await ready(page)
    const sent = (app.scripted!.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> }).messages.filter((m) => m.role === 'user').at(-1)!.content
    // useChat puts the files before the text; the prompt keeps the message's order.
    expect(sent).toEqual([
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
      { type: 'text', text: notes },
      { type: 'text', text: 'What is in the attached files?' },
    ])
    const stored = (await app.engine.messages(chatId)).filter((m) => m.info.role === 'user').at(-1)!
    expect(stored.parts).toEqual([
      expect.objectContaining({ type: 'file', image: true, mediaType: 'image/png', data: png.toString('base64') }),
      expect.objectContaining({ type: 'file', mediaType: 'text/plain', filename: 'notes.txt', data: Buffer.from(notes).toString('base64') }),
      expect.objectContaining({ type: 'text', text: 'What is in the attached files?' }),
    ])
    await page.reload()
    await assistant(page, 4, 'I received your files')
    const attachments = page.locator('[data-testid=message-user]').last().getByTestId('attachment')
    expect(await attachments.count()).toBe(2)
    expect(await attachments.first().evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(1) // the PNG decodes in the page
    expect(await attachments.last().textContent()).toBe('notes.txt')

    // 6. Typing while the turn runs (here, while it waits to retry): the message steers the turn.
    await send(page, examplePrompts.folder)
    await page.getByTestId('retry').waitFor()
    expect(await page.getByTestId('send').textContent()).toBe('Steer')
    await send(page, 'also count the hidden files')
    await page.getByTestId('steered').filter({ hasText: 'also count the hidden files' }).waitFor()
    await assistant(page, 5, 'The folder holds')
    await ready(page)
    const asked = (app.scripted!.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> }).messages.filter((m) => m.role === 'user').map((m) => m.content)
    expect(asked.slice(-2)).toEqual([examplePrompts.folder, 'also count the hidden files'])

    // 7. A denial: the model's answer fits it, and the page shows why.
    await send(page, examplePrompts.deploy)
    await page.getByTestId('deny').waitFor()
    // The reason typed beside Deny is the one the engine stores and the model sees.
    await page.getByTestId('deny-reason').fill('not on a Friday')
    await page.getByTestId('deny').click()
    await page.locator('[data-testid=tool-deploy][data-tool-state=output-denied]').last().waitFor()
    await page.getByText('Understood: I did not deploy').waitFor()
    await ready(page)
    expect(await page.getByTestId('denial').last().textContent()).toBe('denied: not on a Friday')
    expect(JSON.stringify((app.scripted!.requests.at(-1)!.body as { messages: unknown[] }).messages)).toContain('not on a Friday')
    expect(await page.locator('body').textContent()).not.toMatch(/live in production.*live in production/s)

    await page.screenshot({ path: path.join(outDir, 'chat.png'), fullPage: true })
  },
  180_000,
)

browserTest('a reminder the model schedules (scheduleTool): approved, stored, started by the engine at its time with no page asking; a reload shows its prompt and answer', async () => {
  await start()
  const page = await context.newPage()
  await page.goto(app.url)
  await page.getByTestId('prompt').waitFor()
  const chatId = new URL(page.url()).searchParams.get('chat')!
  // The reminder's turn: queued by its occurrence, then run to its end (the page follows only the turns it starts).
  const reminded = new Promise<void>((resolve) => {
    let fired: string | undefined
    const off = app.engine.subscribe((e) => {
      if (e.type === 'schedule.fired' && e.sessionId === chatId) fired = e.turnId
      if (e.type === 'turn.transition' && e.turnId === fired && e.to === 'completed') {
        off()
        resolve()
      }
    })
  })
  await send(page, 'Remind me in 2 seconds to stretch')
  await page.getByTestId('approve').waitFor()
  await page.getByTestId('approve').click()
  await page.locator('[data-testid=message-assistant]').filter({ hasText: 'Reminder set' }).waitFor()
  await ready(page)
  expect(await app.engine.schedules({ sessionId: chatId })).toEqual([expect.objectContaining({ sessionId: chatId, at: expect.any(Number) })])
  await reminded
  await page.reload()
  await page.locator('[data-testid=message-user]').filter({ hasText: 'Remind me to stretch' }).waitFor()
  await page.locator('[data-testid=message-assistant]').filter({ hasText: 'Reminder: time to stretch!' }).waitFor()
  await page.close()
}, 60_000)

browserTest('at 1280×800, below a long conversation, an approval scrolls into view: Approve and Deny are on screen without scrolling by hand', async () => {
  await start()
  const page = await context.newPage()
  await page.setViewportSize({ width: 1280, height: 800 })
  await page.goto(app.url)
  await page.getByTestId('prompt').waitFor()
  // A conversation longer than the window (each prompt an answer of a line).
  for (let i = 1; i <= 10; i++) {
    await send(page, `note number ${i}`)
    await page.locator('[data-testid=message-assistant]').filter({ hasText: `note number ${i}` }).waitFor()
    await ready(page)
  }
  await send(page, examplePrompts.deploy)
  await page.getByTestId('deny').waitFor()
  /** The element's box lies within the 800 px high viewport. */
  const inView = async (testId: string) => {
    const box = (await page.getByTestId(testId).last().boundingBox())!
    return box.y >= 0 && box.y + box.height <= 800
  }
  await page.waitForFunction(() => (globalThis as any).document.scrollingElement.scrollTop > 0)
  expect({ approve: await inView('approve'), deny: await inView('deny') }).toEqual({ approve: true, deny: true })
  await page.getByTestId('deny').last().click()
  await ready(page)
  await page.close()
}, 90_000)

browserTest('at 360 px the page does not scroll sideways, and Send, Stop and an approval\'s buttons stay on screen', async () => {
  await start()
  const page = await context.newPage()
  await page.setViewportSize({ width: 360, height: 740 })
  await page.goto(app.url)
  await page.getByTestId('prompt').waitFor()
  const noSideways = () => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth <= (globalThis as any).document.documentElement.clientWidth)
  /** The element's box lies within the 360 px viewport. */
  const onScreen = async (testId: string) => {
    const box = (await page.getByTestId(testId).last().boundingBox())!
    return box.x >= 0 && box.x + box.width <= 360
  }
  expect({ noSideways: await noSideways(), send: await onScreen('send'), stop: await onScreen('stop') }).toEqual({ noSideways: true, send: true, stop: true })
  await send(page, examplePrompts.deploy)
  await page.getByTestId('deny').waitFor()
  expect({ noSideways: await noSideways(), approve: await onScreen('approve'), reason: await onScreen('deny-reason'), deny: await onScreen('deny') }).toEqual({ noSideways: true, approve: true, reason: true, deny: true })
  await page.getByTestId('deny').click()
  await page.getByText('Understood: I did not deploy').waitFor()
  await ready(page)
  expect(await noSideways()).toBe(true)
  const chatId = new URL(page.url()).searchParams.get('chat')!

  // While an approval waits, a message sent is steered: shown as waiting, and still there after a reload.
  await send(page, examplePrompts.deploy)
  await page.getByTestId('approve').waitFor()
  expect(await page.getByTestId('send').textContent()).toBe('Steer')
  await send(page, 'and say where it went')
  const waitingSteer = page.getByTestId('queued-steer').filter({ hasText: 'and say where it went' })
  await waitingSteer.waitFor()
  await page.reload()
  await waitingSteer.waitFor()
  // The input edited before Approve: the tool runs with it; then the turn takes the steered message.
  await page.getByTestId('edit-input').last().fill('{"env":"staging"}')
  expect({ noSideways: await noSideways(), edit: await onScreen('edit-input'), approve: await onScreen('approve') }).toEqual({ noSideways: true, edit: true, approve: true })
  await page.getByTestId('approve').last().click()
  await page.locator('[data-testid=tool-deploy][data-tool-state=output-available]').filter({ hasText: 'deployed to staging' }).waitFor()
  await page.getByTestId('steered').filter({ hasText: 'and say where it went' }).waitFor()
  await ready(page)
  expect(await page.getByTestId('queued-steer').count()).toBe(0)
  const deployed = (await app.engine.messages(chatId)).flatMap((m) => m.parts).filter((p) => p.type === 'tool' && p.tool === 'deploy').at(-1)
  expect(deployed).toMatchObject({ state: { status: 'completed', input: { env: 'staging' }, output: 'deployed to staging' } })

  // A deferred call (the restaurant answers later): the turn waits; a button on the page settles it
  // (POST <api>/<id>/calls, engine.resolveCall) and the page follows the turn to its answer.
  await send(page, examplePrompts.book)
  await page.getByTestId('settle-output').waitFor()
  expect(await page.getByTestId('status').textContent()).toBe('waiting for the restaurant')
  expect(await onScreen('settle-output')).toBe(true)
  await page.getByTestId('settle-output').click()
  await page.locator('[data-testid=tool-book][data-tool-state=output-available]').filter({ hasText: 'confirmed: 8 pm' }).waitFor()
  await page.getByText('The restaurant confirmed: a table for two at 8 pm.').waitFor()
  await ready(page)
  expect(await page.getByTestId('settle').count()).toBe(0)

  // Stop while an approval waits: the turn ends aborted, and the page is ready again.
  await send(page, examplePrompts.deploy)
  await page.getByTestId('approve').waitFor()
  expect(await page.getByTestId('status').textContent()).toBe('awaiting approval')
  expect(await onScreen('stop')).toBe(true)
  const waitingTurn = app.engine.activeTurn(chatId)!
  await page.getByTestId('stop').click()
  expect((await waitingTurn.done).outcome).toBe('aborted')
  await ready(page)
  expect(await page.getByTestId('message-error').last().textContent()).toMatch(/^MessageAbortedError/)
  expect(await page.getByTestId('approve').count()).toBe(0)
  await page.close()
}, 60_000)
