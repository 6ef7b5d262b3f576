import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import * as OTPAuth from 'otpauth'
import { base32Decode, base32Encode, totp } from './rfc6238.js'

/** A Secret holding exactly these bytes (a Buffer's .buffer may be a larger shared pool). */
function secretOf(buf: Buffer): OTPAuth.Secret {
  return new OTPAuth.Secret({ buffer: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) })
}

describe('RFC 6238 reference implementation', () => {
  test('Appendix B test vectors (SHA-1, 8 digits)', { timeout: 10_000 }, () => {
    const secret = Buffer.from('12345678901234567890', 'ascii')
    const vectors: [number, string][] = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130']
    ]
    for (const [time, code] of vectors) {
      assert.equal(totp(secret, { time, digits: 8 }), code, `T = ${time}`)
    }
  })

  test('six digits are the low six of the same truncation, zero-padded', { timeout: 10_000 }, () => {
    const secret = Buffer.from('12345678901234567890', 'ascii')
    assert.equal(totp(secret, { time: 59 }), '287082')
    assert.equal(totp(secret, { time: 1111111109 }), '081804')
    // The same 30-second step gives the same code; the next step does not (here).
    assert.equal(totp(secret, { time: 1111111080 }), totp(secret, { time: 1111111109 }))
    assert.notEqual(totp(secret, { time: 1111111110 }), totp(secret, { time: 1111111109 }))
  })

  test('agrees with otpauth for a random secret at several times', { timeout: 10_000 }, () => {
    const secret = randomBytes(20)
    const fromHex = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromHex(secret.toString('hex')), digits: 6, period: 30, algorithm: 'SHA1' })
    const fromBytes = new OTPAuth.TOTP({ secret: secretOf(secret), digits: 6, period: 30, algorithm: 'SHA1' })
    const now = Math.floor(Date.now() / 1000)
    for (const time of [0, 29, 30, 59, 1111111109, 1700000000, now - 30, now, now + 30, 4102444800]) {
      const expected = totp(secret, { time })
      assert.equal(fromHex.generate({ timestamp: time * 1000 }), expected, `T = ${time}`)
      assert.equal(fromBytes.generate({ timestamp: time * 1000 }), expected, `T = ${time}`)
    }
  })

  test('otpauth validate returns the step delta within the window, null outside it', { timeout: 10_000 }, () => {
    const secret = randomBytes(20)
    const otp = new OTPAuth.TOTP({ secret: secretOf(secret), digits: 6, period: 30, algorithm: 'SHA1' })
    const time = 1_700_000_015
    const at = (offset: number): string => totp(secret, { time: time + offset * 30 })
    assert.equal(otp.validate({ token: at(0), timestamp: time * 1000, window: 1 }), 0)
    assert.equal(otp.validate({ token: at(-1), timestamp: time * 1000, window: 1 }), -1)
    assert.equal(otp.validate({ token: at(1), timestamp: time * 1000, window: 1 }), 1)
    // Two steps away: outside a window of 1 (unless the codes happen to collide).
    if (![at(-1), at(0), at(1)].includes(at(2))) {
      assert.equal(otp.validate({ token: at(2), timestamp: time * 1000, window: 1 }), null)
    }
    assert.equal(otp.validate({ token: at(0), timestamp: time * 1000, window: 0 }), 0)
  })

  test('base32 round trips and matches otpauth', { timeout: 10_000 }, () => {
    for (const length of [0, 1, 2, 3, 4, 5, 6, 10, 16, 20, 32, 64]) {
      const buf = randomBytes(length)
      const encoded = base32Encode(buf)
      assert.match(encoded, /^[A-Z2-7]*$/)
      assert.equal(encoded.length, Math.ceil((length * 8) / 5))
      assert.deepEqual(base32Decode(encoded), buf)
      assert.deepEqual(base32Decode(encoded.toLowerCase()), buf)
      assert.equal(encoded, secretOf(buf).base32, `length ${length}`)
      assert.deepEqual(Buffer.from(OTPAuth.Secret.fromBase32(encoded).bytes), buf)
    }
  })

  test('base32 RFC 4648 vectors and bad input', { timeout: 10_000 }, () => {
    const vectors: [string, string][] = [
      ['', ''], ['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'],
      ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']
    ]
    for (const [plain, encoded] of vectors) {
      assert.equal(base32Encode(Buffer.from(plain)), encoded)
      assert.equal(base32Decode(encoded).toString(), plain)
    }
    assert.equal(base32Decode('MZXW6YQ=').toString(), 'foob')
    assert.throws(() => base32Decode('MZXW1'), /invalid base32/)
  })
})
