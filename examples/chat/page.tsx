/**
 * The example's page: the AI SDK's useChat against turnchart's chat handler. It shows the
 * conversation, reasoning, tool calls, attached files, the chart's state with a retry countdown,
 * a stop button and approve/deny buttons; a reload resumes the running turn (`resume: true`).
 * While a turn runs, the input stays open: what the user sends then steers the running turn
 * (the handler's `whenBusy: 'steer'`), which shows it where the model took it; one sent while
 * an approval waits is shown as waiting (read back from the engine's queue after a reload). An
 * approval's input can be edited before Approve (the engine's `editableApprovals`). A call whose
 * result comes later (deferred) or whose outcome is unknown (in doubt, after a crash) is settled
 * from the page: `POST /api/chat/<id>/calls`, then the turn's stream is resumed.
 */
import { useChat } from '@ai-sdk/react'
import { DefaultChatTransport, getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai'
import { useEffect, useRef, useState } from 'react'
import { createRoot } from 'react-dom/client'

interface TurnState {
  turnId: string
  state: string
  attempt: number
  retryAt: number | null
  message?: string
}

const chartStates = ['streaming', 'tool-running', 'awaiting-approval', 'awaiting-deferred', 'call-in-doubt', 'retry-waiting', 'compacting', 'completed', 'failed', 'aborted']

/** How a waiting call is settled: its result, an error, or (in doubt) run again. */
type Settlement = { output: unknown } | { error: string } | { retry: true }

/** The buttons that settle the calls a turn waits on, by the state it waits in (they become `engine.resolveCall`). */
const settleButtons: Record<string, Array<{ label: string; testId: string; settlement: Settlement }>> = {
  'awaiting-deferred': [
    { label: 'The restaurant confirms', testId: 'settle-output', settlement: { output: 'confirmed: 8 pm' } },
    { label: 'The restaurant is full', testId: 'settle-error', settlement: { error: 'the restaurant is full' } },
  ],
  'call-in-doubt': [
    { label: 'It ran', testId: 'settle-output', settlement: { output: 'charged (checked with the bank)' } },
    { label: 'It did not run', testId: 'settle-error', settlement: { error: 'not charged (checked with the bank)' } },
    { label: 'Run it again', testId: 'settle-retry', settlement: { retry: true } },
  ],
}

type OnSettle = (callId: string, settlement: Settlement) => void

/** What the status line says while the turn waits. */
const waitingLabel: Record<string, string> = { 'awaiting-approval': 'awaiting approval', 'awaiting-deferred': 'waiting for the restaurant', 'call-in-doubt': 'call in doubt: did it run?' }

/** The chat id lives in the URL, so a reload reopens the same conversation. */
function chatIdFromUrl(): string {
  const url = new URL(window.location.href)
  let id = url.searchParams.get('chat')
  if (!id) {
    id = `chat-${Math.random().toString(36).slice(2, 10)}`
    url.searchParams.set('chat', id)
    window.history.replaceState(null, '', url)
  }
  return id
}

/**
 * The time now, read at each render; while `active`, a render every 200 ms. (A time kept in
 * state would be the one of the component's first render when a countdown starts: its first
 * frame showed a 3 s wait as 5 s.)
 */
function useNow(active: boolean): number {
  const [, setTick] = useState(0)
  useEffect(() => {
    if (!active) return
    const timer = setInterval(() => setTick((tick) => tick + 1), 200)
    return () => clearInterval(timer)
  }, [active])
  return Date.now()
}

function ChartState({ turn }: { turn: TurnState | undefined }) {
  const waiting = turn?.state === 'retry-waiting' && turn.retryAt !== null
  const now = useNow(waiting)
  return (
    <div className="chart" data-testid="chart">
      {chartStates.map((s) => (
        <span key={s} className={`state ${turn?.state === s ? 'current' : ''}`} data-state={s}>
          {s}
        </span>
      ))}
      {waiting && (
        <div className="retry" data-testid="retry">
          attempt {turn!.attempt} in {Math.max(0, Math.ceil((turn!.retryAt! - now) / 1000))} s: {turn!.message}
        </div>
      )}
    </div>
  )
}

/** `input`: the call's input as the user edited it (JSON), when it differs from the model's. */
type OnApproval = (id: string, approved: boolean, options?: { reason?: string; toolCallId?: string; input?: unknown }) => void

/**
 * Approve (with the input as the user may have edited it: the JSON in the field), or deny with a
 * reason the user may type (the model sees it with the denial).
 */
function ApprovalButtons({ approvalId, toolCallId, input, onApproval }: { approvalId: string; toolCallId: string; input: unknown; onApproval: OnApproval }) {
  const [reason, setReason] = useState('')
  const buttons = useRef<HTMLSpanElement>(null)
  // A decision waits: bring it into view (below a long answer it would sit under the fold). (A
  // block body: Chromium's scrollIntoView returns a promise, which React would take for a cleanup.)
  useEffect(() => {
    void buttons.current?.scrollIntoView({ block: 'center' })
  }, [])
  const original = JSON.stringify(input ?? {})
  const [edited, setEdited] = useState(original)
  let parsed: { ok: boolean; value?: unknown } = { ok: true, value: input }
  try {
    parsed = { ok: true, value: JSON.parse(edited) }
  } catch {
    parsed = { ok: false }
  }
  return (
    <span className="approval" ref={buttons}>
      <input data-testid="edit-input" className="edit-input" value={edited} aria-label="the call's input (JSON), editable" onChange={(e) => setEdited(e.target.value)} />
      <button data-testid="approve" disabled={!parsed.ok} onClick={() => onApproval(approvalId, true, edited === original ? {} : { toolCallId, input: parsed.value })}>
        {edited === original ? 'Approve' : 'Approve edited'}
      </button>
      <input data-testid="deny-reason" value={reason} placeholder="Why not? (optional)" onChange={(e) => setReason(e.target.value)} />
      <button data-testid="deny" onClick={() => onApproval(approvalId, false, { reason: reason.trim() || undefined })}>Deny</button>
    </span>
  )
}

/** `waitingIn`: the state the turn waits in when this message's open calls wait for a result (deferred, in doubt). */
function Message({ message, onApproval, waitingIn, onSettle }: { message: UIMessage; onApproval: OnApproval; waitingIn?: string; onSettle: OnSettle }) {
  // Why a call was denied (whoever denied it): the stream's data-denial parts, or the stored approval.
  const denials = new Map(
    message.parts.flatMap((p) => (p.type === 'data-denial' ? [[(p.data as { toolCallId: string }).toolCallId, (p.data as { reason?: string }).reason]] : [])),
  )
  return (
    <div className={`message ${message.role}`} data-testid={`message-${message.role}`}>
      {message.parts.map((part, i) => {
        if (part.type === 'text') return <p key={i} className="text">{part.text}</p>
        if (part.type === 'data-steered') {
          return <p key={i} className="steered" data-testid="steered">↪ you, while it worked: {(part.data as { text: string }).text}</p>
        }
        if (part.type === 'file') {
          // An attachment (sendMessage({ text, files })): a data: URL of its bytes, or an http(s) URL.
          return part.mediaType.startsWith('image/') ? (
            <img key={i} className="attachment" data-testid="attachment" src={part.url} alt={part.filename ?? 'image'} />
          ) : (
            <a key={i} className="attachment" data-testid="attachment" href={part.url} download={part.filename}>
              {part.filename ?? part.mediaType}
            </a>
          )
        }
        if (part.type === 'reasoning') return <p key={i} className="reasoning" data-testid="reasoning">{part.text}</p>
        if (isToolUIPart(part)) {
          return (
            <div key={i} className={`tool ${part.state}`} data-testid={`tool-${getToolName(part)}`} data-tool-state={part.state}>
              <b>{getToolName(part)}</b> <code>{JSON.stringify(part.input ?? {})}</code> <i>{part.state}</i>
              {part.state === 'output-available' && <pre className="output">{JSON.stringify(part.output, null, 1)}</pre>}
              {part.state === 'output-error' && <pre className="error">{part.errorText}</pre>}
              {part.state === 'output-denied' && (
                <pre className="error" data-testid="denial">denied{(denials.get(part.toolCallId) ?? part.approval?.reason) ? `: ${denials.get(part.toolCallId) ?? part.approval?.reason}` : ''}</pre>
              )}
              {part.state === 'approval-requested' && <ApprovalButtons approvalId={part.approval.id} toolCallId={part.toolCallId} input={part.input} onApproval={onApproval} />}
              {part.state === 'input-available' && waitingIn && settleButtons[waitingIn] && (
                <span className="approval" data-testid="settle">
                  {settleButtons[waitingIn].map((button) => (
                    <button key={button.testId} data-testid={button.testId} onClick={() => onSettle(part.toolCallId, button.settlement)}>
                      {button.label}
                    </button>
                  ))}
                </span>
              )}
            </div>
          )
        }
        return null
      })}
      {(message.metadata as { error?: { name: string; message: string } } | undefined)?.error && (
        <div className="failure" data-testid="message-error">
          {(message.metadata as { error: { name: string; message: string } }).error.name}: {(message.metadata as { error: { message: string } }).error.message}
        </div>
      )}
    </div>
  )
}

/** The messages steered into the chat that no turn took yet (one sent while an approval waits), from the engine's queue. */
async function queuedSteers(id: string): Promise<string[]> {
  const response = await fetch(`/api/chat/${encodeURIComponent(id)}/queued`)
  return response.ok ? ((await response.json()) as string[]) : []
}

function Chat({ id, initial, initialQueued }: { id: string; initial: UIMessage[]; initialQueued: string[] }) {
  // Edited inputs of the approvals being sent, by tool call id: the request's `approvalInputs`.
  const edits = useRef<Record<string, unknown>>({})
  const [transport] = useState(
    () =>
      new DefaultChatTransport({
        api: '/api/chat',
        prepareSendMessagesRequest: ({ id: chatId, messages: sent, body }) => {
          const approvalInputs = edits.current
          edits.current = {}
          return { body: { ...body, id: chatId, messages: sent, ...(Object.keys(approvalInputs).length ? { approvalInputs } : {}) } }
        },
      }),
  )
  const { messages, setMessages, sendMessage, status, stop, error, addToolApprovalResponse, resumeStream } = useChat({
    id,
    messages: initial,
    resume: true,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  })
  const [queued, setQueued] = useState(initialQueued)
  const [input, setInput] = useState('')
  const [files, setFiles] = useState<FileList | undefined>()
  const fileInput = useRef<HTMLInputElement>(null)
  const last = [...messages].reverse().find((m) => m.role === 'assistant')
  const turn = last?.parts.find((p) => p.type === 'data-turn-state') as { data: TurnState } | undefined
  const busy = status === 'submitted' || status === 'streaming'
  // A turn waiting for a decision or a call's result has no open stream (useChat says 'ready'), but it runs: Stop ends it.
  const awaiting = !busy && turn !== undefined && (turn.data.state === 'awaiting-approval' || turn.data.state in settleButtons)
  /** Settles a waiting call, then follows the turn it lets go on (its stream, or its stored end when it ended first). */
  const settle = async (callId: string, settlement: Settlement) => {
    const response = await fetch(`/api/chat/${encodeURIComponent(id)}/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ turnId: turn!.data.turnId, callId, ...settlement }),
    })
    if (!response.ok) return
    await resumeStream()
    setMessages((await (await fetch(`/api/chat/${encodeURIComponent(id)}/messages`)).json()) as UIMessage[])
  }
  // A steer waits in the engine's queue until the turn's next step gate (after the approval): read again as the turn moves.
  const turnState = turn?.data.state
  useEffect(() => {
    let current = true
    void queuedSteers(id).then((texts) => current && setQueued(texts))
    return () => {
      current = false
    }
  }, [id, turnState, status, messages.length])
  // What a timer set earlier sees now.
  const latest = useRef({ busy, lastId: messages.at(-1)?.id })
  latest.current = { busy, lastId: messages.at(-1)?.id }
  const prompts = (window as unknown as { __PROMPTS__: string[] }).__PROMPTS__ ?? []
  const send = (text: string) => {
    if (busy || awaiting) return steer(text)
    if (!text.trim() && !files?.length) return
    // useChat turns the FileList into file parts (data: URLs); the handler makes them the prompt's images and files.
    void sendMessage({ text, files })
    setInput('')
    setFiles(undefined)
    if (fileInput.current) fileInput.current.value = ''
  }
  /** A message while the turn runs: the handler steers the turn with it (202); the turn's stream shows it. */
  const steer = (text: string) => {
    if (!text.trim()) return
    const message = { id: `steer-${Date.now().toString(36)}`, role: 'user', parts: [{ type: 'text', text }] }
    setInput('')
    void fetch('/api/chat', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, messages: [...messages, message] }) }).then(async () =>
      setQueued(await queuedSteers(id)),
    )
  }
  const stopTurn = async () => {
    // The server keeps turns running when a stream drops (so a reload resumes): stop explicitly,
    // and let the stream deliver the turn's end (the chart's 'aborted', the abort). Only a stream
    // that does not end is cut here.
    const stopping = messages.at(-1)?.id
    await fetch(`/api/chat/${encodeURIComponent(id)}/stream`, { method: 'DELETE' })
    if (awaiting) {
      // No stream brings the end of a turn stopped while it waited: read the stored conversation.
      const stored = (await (await fetch(`/api/chat/${encodeURIComponent(id)}/messages`)).json()) as UIMessage[]
      setMessages(stored)
      return
    }
    setTimeout(() => {
      const now = latest.current
      if (now.busy && now.lastId === stopping) void stop()
    }, 3000)
  }
  return (
    <main>
      <h1>turnchart chat</h1>
      <ChartState turn={turn?.data} />
      <div className="messages">
        {messages.map((m) => (
          <Message
            key={m.id}
            message={m}
            waitingIn={m === last && awaiting ? turn?.data.state : undefined}
            onSettle={(callId, settlement) => void settle(callId, settlement)}
            onApproval={(approvalId, approved, options = {}) => {
              if (approved && options.toolCallId) edits.current[options.toolCallId] = options.input
              void addToolApprovalResponse({ id: approvalId, approved, ...(approved ? {} : { reason: options.reason ?? 'denied from the page' }) })
            }}
          />
        ))}
        {queued.map((text, i) => (
          <p key={`queued-${i}`} className="steered queued" data-testid="queued-steer">↪ you, waiting for the next step: {text}</p>
        ))}
      </div>
      {error && <div className="failure" data-testid="error">{error.message}</div>}
      <div className="status" data-testid="status">{awaiting ? waitingLabel[turn!.data.state] : status}</div>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          send(input)
        }}
      >
        <input data-testid="prompt" value={input} placeholder={busy ? 'Add something while it works' : 'Ask something'} onChange={(e) => setInput(e.target.value)} />
        <input type="file" multiple data-testid="file" ref={fileInput} disabled={busy} onChange={(e) => setFiles(e.target.files ?? undefined)} />
        <button type="submit" data-testid="send">{busy || awaiting ? 'Steer' : 'Send'}</button>
        <button type="button" data-testid="stop" disabled={!busy && !awaiting} onClick={() => void stopTurn()}>Stop</button>
      </form>
      <div className="prompts">
        {prompts.map((p) => (
          <button key={p} type="button" disabled={busy} onClick={() => send(p)}>{p}</button>
        ))}
      </div>
    </main>
  )
}

function App() {
  const [id] = useState(chatIdFromUrl)
  const [initial, setInitial] = useState<{ messages: UIMessage[]; queued: string[] } | undefined>()
  useEffect(() => {
    Promise.all([fetch(`/api/chat/${encodeURIComponent(id)}/messages`).then((r) => r.json() as Promise<UIMessage[]>), queuedSteers(id)])
      .then(([messages, queued]) => setInitial({ messages, queued }))
      .catch(() => setInitial({ messages: [], queued: [] }))
  }, [id])
  return initial ? <Chat id={id} initial={initial.messages} initialQueued={initial.queued} /> : <p>loading…</p>
}

const style = document.createElement('style')
style.textContent = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
main { max-width: 820px; margin: 0 auto; padding: 16px; }
h1 { font-size: 20px; margin: 4px 0 12px; }
.chart { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 12px; align-items: center; }
.state { padding: 2px 8px; border-radius: 10px; background: #e3e6eb; color: #5a6272; font-size: 12px; }
.state.current { background: #2f6fed; color: white; font-weight: 600; }
.retry { width: 100%; color: #a35a00; font-size: 13px; }
.message { padding: 8px 12px; margin: 8px 0; border-radius: 8px; background: white; box-shadow: 0 1px 2px #0001; }
.message.user { background: #e8f0ff; }
.reasoning { color: #6b7280; font-style: italic; }
.steered { color: #2f6fed; font-size: 13px; }
.tool { border-left: 3px solid #2f6fed; padding: 4px 8px; margin: 6px 0; background: #f3f6fd; font-size: 13px; }
.tool.output-error, .tool.output-denied { border-color: #c0392b; }
.output { margin: 4px 0 0; max-height: 120px; overflow: auto; }
.approval { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 4px; }
.edit-input { font-family: ui-monospace, monospace; font-size: 12px; }
.steered.queued { font-style: italic; }
/* At 360 px the row wraps: the file picker (about 250 px wide by itself) goes on a line of its own. */
form { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 12px; }
input { flex: 1 1 160px; min-width: 0; padding: 6px 8px; }
input[type=file] { flex: 1 1 100%; max-width: 100%; padding: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.message { overflow-wrap: anywhere; }
.prompts { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 8px; }
.status { color: #6b7280; font-size: 12px; }
.failure { color: #c0392b; }
.attachment { display: block; margin: 4px 0; max-width: 120px; max-height: 120px; }
`
document.head.append(style)
createRoot(document.getElementById('root')!).render(<App />)
