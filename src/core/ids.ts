/**
 * Identifiers: a prefix, 10 characters of time and 16 random characters (Crockford base32),
 * like a ULID. Sortable by creation time (so ordering parts and messages by id is ordering by
 * creation), monotonic within a process, and not guessable from one another.
 */
import { randomFillSync } from 'node:crypto'

const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
let lastTime = -1
let lastRandom: number[] = []

const alphabetCodes = Array.from(alphabet, (character) => character.charCodeAt(0))
/** Scratch space for one id's characters: each id is made as one string, not character by character. */
const codes: number[] = new Array<number>(16)

function encodeTime(ms: number): string {
  for (let i = 9; i >= 0; i--) {
    codes[i] = alphabetCodes[ms % 32]
    ms = Math.floor(ms / 32)
  }
  return String.fromCharCode.apply(null, codes.slice(0, 10))
}

/** The time part of the ids of the last millisecond (most ids of a step share it). */
let lastTimeText = ''

function encodeRandom(digits: number[]): string {
  for (let i = 0; i < 16; i++) codes[i] = alphabetCodes[digits[i]]
  return String.fromCharCode.apply(null, codes)
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
export function newId(prefix: 'ses' | 'msg' | 'prt' | 'trn' | 'ctl' | 'sch', now = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom)
  } else {
    lastTime = now
    lastTimeText = encodeTime(now)
    lastRandom = freshRandom()
  }
  return `${prefix}_${lastTimeText}${encodeRandom(lastRandom)}`
}
