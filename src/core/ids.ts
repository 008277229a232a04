/**
 * Identifiers: a prefix, 10 characters of time and 16 random characters (Crockford base32),
 * like a ULID. Sortable by creation time (so ordering parts and messages by id is ordering by
 * creation), monotonic within a process, and not guessable from one another.
 */
import { randomFillSync } from 'node:crypto'

const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
let lastTime = -1
let lastRandom: number[] = []

function encodeTime(ms: number): string {
  let out = ''
  for (let i = 0; i < 10; i++) {
    out = alphabet[ms % 32] + out
    ms = Math.floor(ms / 32)
  }
  return out
}

// Random bytes drawn from the system 4 KB at a time: one call per 256 ids, not one per id.
const pool = Buffer.alloc(4096)
let poolOffset = pool.length

function freshRandom(): number[] {
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  const digits = new Array<number>(16)
  for (let i = 0; i < 16; i++) digits[i] = pool[poolOffset + i] & 31
  poolOffset += 16
  return digits
}

function increment(digits: number[]): number[] {
  const next = digits.slice()
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i] < 31) {
      next[i]++
      return next
    }
    next[i] = 0
  }
  return freshRandom() // overflow after 32^16 ids in one millisecond: practically unreachable
}

/**
 * A new id with the given prefix.
 *
 * @example
 * newId('ses') // 'ses_01JD3Q6V7Z9X4M2K8N5P0R1S2T'
 */
export function newId(prefix: 'ses' | 'msg' | 'prt' | 'trn' | 'ctl', now = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom)
  } else {
    lastTime = now
    lastRandom = freshRandom()
  }
  let random = ''
  for (const digit of lastRandom) random += alphabet[digit]
  return `${prefix}_${encodeTime(lastTime)}${random}`
}
