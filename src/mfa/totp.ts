import { randomBytes } from 'node:crypto'
import type * as OTPAuth from 'otpauth'
import { lazyRequire } from '../lazy-require.js'

// TOTP (RFC 6238) through otpauth: SHA-1, six digits, 30-second steps, the parameters every
// authenticator app reads from an otpauth:// URI. The glue here only fixes them, and turns the
// library's "delta" into the absolute step a code was for, so that a code is accepted once.

// Required at the first enrolment or code, not at start (docs/PERFORMANCE.md, Memory).
const otpauth = lazyRequire<typeof OTPAuth>('otpauth')

export const STEP_SECONDS = 30
/** A code is good in its step and one step either side (clock drift between phone and server). */
export const WINDOW = 1

/** A new secret: 160 random bits, RFC 4226's recommended length. */
export function newSecret (): Buffer {
  return randomBytes(20)
}

function totpOf (secret: Buffer, label = '', issuer = ''): OTPAuth.TOTP {
  const buffer = secret.buffer.slice(secret.byteOffset, secret.byteOffset + secret.byteLength)
  const { TOTP, Secret } = otpauth()
  return new TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period: STEP_SECONDS, secret: new Secret({ buffer }) })
}

export interface Enrolment {
  /** The secret in base32, for typing into an app by hand. */
  secret: string
  otpauthUri: string
  qrCodeSvg: string
}

/** What a person needs to add the factor to an app: the secret, its otpauth:// URI and that URI as a QR code (SVG). */
export async function enrolment (secret: Buffer, account: string, issuer: string): Promise<Enrolment> {
  const totp = totpOf(secret, account, issuer)
  const otpauthUri = totp.toString()
  // Loaded at the first enrolment, not at start: qrcode and its PNG encoder are 57 modules that
  // every process would otherwise load and most never use.
  const { default: QRCode } = await import('qrcode')
  const qrCodeSvg = await QRCode.toString(otpauthUri, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 })
  return { secret: totp.secret.base32, otpauthUri, qrCodeSvg }
}

/** The step a code is good for at `now` (its own step, or one either side), or undefined. */
export function stepOf (secret: Buffer, code: string, now = Date.now()): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined
  const delta = totpOf(secret).validate({ token: code, timestamp: now, window: WINDOW })
  return delta === null ? undefined : Math.floor(now / 1000 / STEP_SECONDS) + delta
}
