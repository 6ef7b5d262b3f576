import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { base32Decode, totp } from '../support/rfc6238.js'
import type { SmtpCapture } from '../support/smtp-capture.js'
import { tokenIn } from '../support/smtp-capture.js'
import type { TestUser } from '../helper.js'

// What the tests of taking an account (pre-hijacking, a stolen session) do again and again, as
// a person would: take an account by a mailed reset, turn a second factor on, make a key.

export const RESET_SUBJECT = 'Reset your password'

/** Asks for a reset of `email`, opens the mailed link and sets `newPassword`: the reset's answer. */
export async function resetByMail (app: FastifyInstance, smtp: SmtpCapture, email: string, newPassword: string) {
  const asked = await app.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email } })
  assert.equal(asked.statusCode, 202, asked.body)
  const token = tokenIn(await smtp.next(email, RESET_SUBJECT))
  return await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { token, newPassword } })
}

/** A code of the authenticator app `secret` at `offset` steps from now (an independent RFC 6238 implementation). */
export function codeOf (secret: Buffer, offset = 0): string {
  return totp(secret, { time: Math.floor(Date.now() / 1000) + offset * 30 })
}

/** Enrols and activates a second factor on the account (with its fresh session); returns its secret. */
export async function turnOnFactor (app: FastifyInstance, user: TestUser): Promise<Buffer> {
  const enrolled = await app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp`, headers: user.auth })
  assert.equal(enrolled.statusCode, 201, enrolled.body)
  const secret = base32Decode(enrolled.json().secret)
  // A code of the step before: the next one (this step's) stays free for a log-in.
  const activated = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/totp`, headers: user.auth, payload: { code: codeOf(secret, -1) } })
  assert.equal(activated.statusCode, 200, activated.body)
  return secret
}

/** Makes an API key with these scopes; returns its Authorization header. */
export async function makeKey (app: FastifyInstance, user: TestUser, scopes: string[]): Promise<{ authorization: string }> {
  const created = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'prepared', scopes } })
  assert.equal(created.statusCode, 201, created.body)
  return { authorization: `Bearer ${created.json().key as string}` }
}
