import { randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

// An API key is `rk_`, 32 random base62 characters (190 bits) and a 6-character base62 CRC-32
// of what comes before it, as GitHub's tokens are made: secret scanners recognise a key by its
// prefix and can tell a real one by its checksum, and the service refuses a mistyped or
// made-up key without looking it up. The database keeps only its SHA-256 (sessions/token.ts).

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const RANDOM_LENGTH = 32
const CHECKSUM_LENGTH = 6
export const KEY_PREFIX = 'rk_'
const KEY = /^rk_[A-Za-z0-9]{38}$/
/** How much of a key is shown as its `prefix`: enough for a person to tell their keys apart. */
const SHOWN = KEY_PREFIX.length + 8

function base62 (value: number, length: number): string {
  let text = ''
  for (let i = 0; i < length; i++) {
    text = ALPHABET[value % 62]! + text
    value = Math.floor(value / 62)
  }
  return text
}

function checksum (body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH)
}

/** A new key (shown once) and the prefix it is listed by. */
export function newKey (): { key: string, prefix: string } {
  let random = ''
  while (random.length < RANDOM_LENGTH) {
    // Bytes of 248 and over are skipped, so every character is equally likely (248 = 4 × 62).
    for (const byte of randomBytes(RANDOM_LENGTH)) if (byte < 248 && random.length < RANDOM_LENGTH) random += ALPHABET[byte % 62]
  }
  const body = KEY_PREFIX + random
  const key = body + checksum(body)
  return { key, prefix: key.slice(0, SHOWN) }
}

/** Whether a bearer credential is meant as an API key (by its prefix), well formed or not. */
export function looksLikeKey (credential: string): boolean {
  return credential.startsWith(KEY_PREFIX)
}

/** Whether a key is well formed with a matching checksum: one that is not is refused unlooked-up. */
export function wellFormedKey (key: string): boolean {
  return KEY.test(key) && checksum(key.slice(0, -CHECKSUM_LENGTH)) === key.slice(-CHECKSUM_LENGTH)
}
