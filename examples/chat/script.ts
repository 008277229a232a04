/**
 * What the scripted model answers in the example, chosen by a keyword of the prompt, so every
 * feature of the page can be tried in any order without an API key.
 */
import type { ScriptedServer } from '../../src/testing'

/** The prompts the page suggests; each shows one feature. */
export const examplePrompts = {
  folder: 'What is in this folder? (steer it while it retries)',
  deploy: 'Deploy the site to production',
  poem: 'Write a very long poem about state machines',
  story: 'Tell me a story about a statechart',
  book: 'Book a table for two tonight',
  charge: 'Charge my card 20 euros',
  remind: 'Remind me in 10 seconds to stretch',
}

function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? [text]
}

/** The story's text, in full (the browser test checks the resumed page ends with exactly this). */
export const storyText =
  'Once upon a time a turn woke up in idle. It streamed a word, and then another, each one a delta on the bus. ' +
  'The page that watched it was reloaded half way, yet the story went on, because every part it had told was still in memory, ' +
  'and the page asked for them again before the next word arrived. Nothing was lost and nothing was told twice. The end.'

/** Queues the model's answer to an approval decision of a `deploy` or `remind` call (call before it is applied). */
export function queueApprovalReply(server: ScriptedServer, tool: string, approved: boolean): void {
  const text =
    tool === 'remind'
      ? approved
        ? 'Reminder set: I will write to you then (reload the page to see it).'
        : 'Understood: no reminder.'
      : approved
        ? 'Done: the site is live in production.'
        : 'Understood: I did not deploy; production is unchanged.'
  server.push({ type: 'stream', delayMs: 15, chunks: words(text).map((w) => ({ text: w })) })
}

/** Queues the model's answer to a turn a reminder started (`schedule.fired`): the prompt it stored is the reminder. */
export function queueReminderReply(server: ScriptedServer): void {
  server.push({ type: 'stream', delayMs: 15, chunks: words('Reminder: time to stretch!').map((w) => ({ text: w })) })
}

/** How a waiting call was settled through `POST /api/chat/<id>/calls` (`engine.resolveCall`). */
export type CallSettlement = { output: unknown } | { error: string } | { retry: true }

/** Queues the model's answer once a waiting call (`book`, deferred; `charge`, in doubt) is settled (call before it is applied). */
export function queueCallReply(server: ScriptedServer, tool: string, settlement: CallSettlement): void {
  const ran = !('error' in settlement)
  const text =
    tool === 'book'
      ? ran
        ? 'The restaurant confirmed: a table for two at 8 pm.'
        : 'The restaurant could not take the booking; shall I try another one?'
      : ran
        ? 'Your card was charged 20 euros.'
        : 'Nothing was charged: the payment did not go through.'
  server.push({ type: 'stream', delayMs: 15, chunks: words(text).map((w) => ({ text: w })) })
}

/** Queues the replies for `prompt` on the scripted server (call before the turn starts). */
export function queueReplies(server: ScriptedServer, prompt: string, folderEntries: string[]): void {
  const text = prompt.toLowerCase()
  if (text.includes('folder')) {
    server.push({
      type: 'stream',
      delayMs: 15,
      chunks: [
        ...words('The user wants the folder listing; the list tool gives it.').map((w) => ({ reasoning: w })),
        ...words('Let me look at the folder.').map((w) => ({ text: w })),
        { tool: { name: 'list', input: { path: '.' } } },
      ],
      usage: { input: 120, output: 30, reasoning: 12 },
    })
    server.error(429, { error: { message: 'Rate limit reached. Please retry shortly.', type: 'rate_limit_error' } }, { 'retry-after-ms': '3000' })
    // The retried step lists once more, so a message typed during the retry wait joins the turn
    // at the step gate after this call's result (a steer is taken between steps, not between
    // the attempts of one step).
    server.push({ type: 'stream', delayMs: 15, chunks: [{ tool: { name: 'list', input: { path: '.' } } }], usage: { input: 200, output: 12 } })
    server.push({
      type: 'stream',
      delayMs: 15,
      chunks: words(`The folder holds ${folderEntries.length} entries, among them ${folderEntries.slice(0, 5).join(', ')}.`).map((w) => ({ text: w })),
      usage: { input: 260, output: 24 },
    })
  } else if (text.includes('deploy')) {
    // The answer after the decision is queued when it arrives (queueApprovalReply).
    server.push({ type: 'stream', delayMs: 15, chunks: [...words('Deploying needs your approval.').map((w) => ({ text: w })), { tool: { name: 'deploy', input: { env: 'production' } } }] })
  } else if (text.includes('book')) {
    // The tool asks the restaurant and returns `defer()`: the call waits for the restaurant's answer.
    server.push({ type: 'stream', delayMs: 15, chunks: [...words('I will ask the restaurant.').map((w) => ({ text: w })), { tool: { name: 'book', input: { guests: 2 } } }] })
  } else if (text.includes('charge')) {
    // A slow payment gateway: stop the server (kill -9) while it charges, start it again, and the call is in doubt.
    server.push({ type: 'stream', delayMs: 15, chunks: [...words('Charging your card.').map((w) => ({ text: w })), { tool: { name: 'charge', input: { euros: 20 } } }] })
  } else if (text.includes('remind')) {
    // The engine's scheduleTool (`remind`): approved, it stores a schedule; at its time the engine starts a turn on this chat.
    const seconds = Number(/in (\d+) seconds?/.exec(text)?.[1] ?? 10)
    const at = new Date(Date.now() + seconds * 1000).toISOString()
    server.push({ type: 'stream', delayMs: 15, chunks: [...words('I can set a reminder.').map((w) => ({ text: w })), { tool: { name: 'remind', input: { prompt: 'Remind me to stretch', at } } }] })
  } else if (text.includes('poem')) {
    const verse = 'In idle the actor waits, a prompt upon the stack; then streaming, token after token, it never looks back. '
    server.push({ type: 'stream', delayMs: 120, chunks: words(verse.repeat(20)).map((w) => ({ text: w })), end: 'hang' })
  } else if (text.includes('attached')) {
    server.push({ type: 'stream', delayMs: 15, chunks: words('I received your files: an image and a text file.').map((w) => ({ text: w })) })
  } else if (text.includes('story')) {
    server.push({ type: 'stream', delayMs: 70, chunks: words(storyText).map((w) => ({ text: w })) })
  } else {
    server.text(`You said: ${prompt}. Try one of the suggested prompts to see tools, retries, approvals and stops.`)
  }
}
