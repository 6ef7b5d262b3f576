// An independent TOTP (RFC 6238) for tests, built on node:crypto only, so that codes the service
// accepts or issues can be checked without trusting the library that makes them.
import { createHmac } from 'node:crypto'

export interface TotpOptions {
  /** Seconds since the Unix epoch. */
  time: number
  /** Time step in seconds (X in RFC 6238). */
  step?: number
  digits?: number
  algorithm?: 'sha1' | 'sha256' | 'sha512'
}

/** HOTP (RFC 4226) of an 8-byte big-endian counter, with dynamic truncation. */
export function hotp(secret: Buffer, counter: bigint, digits = 6, algorithm: TotpOptions['algorithm'] = 'sha1'): string {
  const message = Buffer.alloc(8)
  message.writeBigUInt64BE(counter)
  const mac = createHmac(algorithm, secret).update(message).digest()
  const offset = mac[mac.length - 1]! & 0x0f
  const binary = mac.readUInt32BE(offset) & 0x7fffffff
  return (binary % 10 ** digits).toString().padStart(digits, '0')
}

/** TOTP (RFC 6238): the HOTP of floor((time - T0) / step), T0 = 0. */
export function totp(secret: Buffer, { time, step = 30, digits = 6, algorithm = 'sha1' }: TotpOptions): string {
  return hotp(secret, BigInt(Math.floor(time / step)), digits, algorithm)
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** Base32 (RFC 4648 section 6) without padding. */
export function base32Encode(buf: Buffer): string {
  let out = ''
  let bits = 0
  let value = 0
  for (const byte of buf) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
    value &= (1 << bits) - 1
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31]
  return out
}

/** Base32 decoding, case-insensitive; trailing '=' padding is ignored, anything else rejected. */
export function base32Decode(text: string): Buffer {
  const clean = text.toUpperCase().replace(/=+$/, '')
  const bytes: number[] = []
  let bits = 0
  let value = 0
  for (const ch of clean) {
    const index = ALPHABET.indexOf(ch)
    if (index < 0) throw new Error(`invalid base32 character ${JSON.stringify(ch)}`)
    value = (value << 5) | index
    bits += 5
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
    value &= (1 << bits) - 1
  }
  return Buffer.from(bytes)
}
