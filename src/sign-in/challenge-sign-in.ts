import type { Config } from '../config/config.js'
import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import { ApiError } from '../http/errors.js'
import { findActiveFactor, findLiveChallenge, dropUsedUpChallenge, spendChallenge, takeGuess } from '../mfa/mfa.repository.js'
import { checkCode, spendCode } from '../mfa/mfa.service.js'
import type { SecretBox } from '../mfa/secret-box.js'
import { beginSignInAttempt } from '../limits/login-throttle.js'
import { startSession } from '../sessions/session.service.js'
import { findUserById } from '../users/user.repository.js'

// The second step of a sign-in to an account with a second factor (admission.ts made the
// challenge): POST /v1/sessions with the challenge and a code (or a recovery code) makes the
// session. Every refusal is the same 401 INVALID_MFA_CODE, and counts as a failed log-in for the
// account's address (the log-in limits), so a challenge is no faster way to guess; a challenge
// takes five guesses in all, however many are sent at once (mfa.repository.ts takeGuess).

function invalidCode (headers: Record<string, string>): ApiError {
  return new ApiError('INVALID_MFA_CODE', { headers })
}

export async function completeChallenge (db: Db, config: Config, box: () => Promise<SecretBox>, body: { challenge: string, code: string }, client: string) {
  const challenge = await findLiveChallenge(db, body.challenge)
  const user = challenge === undefined ? undefined : await findUserById(db, challenge.user_id)
  const factor = user === undefined ? undefined : await findActiveFactor(db, user.id)
  // The key first: a server without one answers 503 before anything counts against the person.
  const secrets = factor === undefined ? undefined : await box()
  const guessed = challenge !== undefined && user !== undefined && await write(db, async (trx) => await takeGuess(trx, challenge.id))
  // Counted like a password: by the account's address from this client, by client, by account.
  // A guess at a challenge that is unknown or void counts against the client alone (it names no
  // account), so guesses past the fifth teach nothing and cost the account nothing.
  const attempt = await beginSignInAttempt(db, config, { email: guessed ? user.email : '', client, userId: guessed ? user.id : undefined })
  if (!guessed) throw invalidCode(attempt.headers(true))
  const check = factor === undefined || secrets === undefined ? undefined : checkCode(secrets, factor, body.code)
  // A refusal inside the unit of work undoes it whole (a step accepted, then the challenge found
  // spent by another request, must not stay accepted).
  const refused = new Error('code refused')
  let session: { token: string, expiresAt: string }
  try {
    session = await write(db, async (trx) => {
      if (!await spendCode(trx, config, user, check)) throw refused
      // Of two requests with the same challenge and two good codes, one session.
      if (!await spendChallenge(trx, challenge.id)) throw refused
      await attempt.succeeded(trx)
      return await startSession(trx, config, user.id)
    })
  } catch (error) {
    if (error !== refused) throw error
    await write(db, async (trx) => { await dropUsedUpChallenge(trx, challenge.id) })
    throw invalidCode(attempt.headers(true))
  }
  return { user, ...session, headers: attempt.headers(false) }
}
