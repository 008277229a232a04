/** A conversation's messages and their parts, as the page shows them. */
import type { MessageInfo } from '../../core/types'
import type { PagePart } from '../wire'
import { el, short } from './dom'
import { clock, duration } from './format'

function renderPart(part: PagePart): HTMLElement {
  const cls = `part part-${part.type}`
  switch (part.type) {
    case 'text':
      return el('div', { class: cls }, part.text)
    case 'reasoning':
      return el('div', { class: cls }, el('span', { class: 'tag' }, 'thinking'), ' ', part.text)
    case 'tool': {
      const s = part.state
      const tail = s.status === 'completed' ? ` → ${short(s.output)}` : s.status === 'error' ? `: ${s.error}` : s.status === 'pending' && s.approval ? ' (waiting for approval)' : s.status === 'in-doubt' ? ` (outcome unknown: ${s.reason}; waiting for resolveCall)` : s.status === 'deferred' ? ' (waiting for its result)' : ''
      return el('div', { class: cls, 'data-status': s.status }, `tool ${part.tool}(${short(s.input, 120)}) ${s.status}${tail}`)
    }
    case 'step-start':
      return el('div', { class: cls }, `step ${part.step} start (attempt ${part.attempt || 1}${part.model ? `, model ${part.model}` : ''})`)
    case 'step-finish':
      return el('div', { class: cls }, `step ${part.step} finish: ${part.reason}, tokens in ${part.tokens.input} out ${part.tokens.output}`)
    case 'compaction':
      return el('div', { class: cls }, `compaction (${part.auto ? 'automatic' : 'manual'})`)
    case 'file': {
      const size = part.bytes !== undefined ? `, ${Math.max(1, Math.round(part.bytes / 1024))} KB` : ''
      return el('div', { class: cls }, `file ${part.filename ?? part.url ?? ''} (${part.mediaType ?? 'unknown type'}${size})`)
    }
    case 'source':
      return el('div', { class: cls }, `source ${part.title ?? part.url ?? part.sourceId}`)
    default:
      return el('div', { class: cls }, short(part))
  }
}

/**
 * @example
 * container.append(renderMessage(info, parts))
 */
export function renderMessage(info: MessageInfo, parts: PagePart[]): HTMLElement {
  const role = info.summary ? 'summary' : info.role
  const took = info.time.completed !== undefined ? ` · ${duration(info.time.completed - info.time.created)}` : ''
  return el(
    'div',
    { class: `message ${info.role}${info.summary ? ' summary' : ''}`, 'data-message': info.id },
    el('div', { class: 'message-head' }, el('span', { class: 'role' }, role), el('span', { class: 'dim mono' }, `${clock(info.time.created)}${took}${info.finish ? ` · finish ${info.finish}` : ''}`)),
    ...parts.map(renderPart),
    info.error ? el('div', { class: 'error-line' }, `${info.error.name}: ${info.error.message}`) : null,
  )
}
