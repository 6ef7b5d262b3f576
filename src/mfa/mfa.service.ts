import type { Config } from '../config/config.js'
import type { Db, Executor } from '../db/schema.js'
import { write } from '../db/write.js'
import { emailKey } from '../http/email.js'
import { ApiError, serviceUnavailable } from '../http/errors.js'
import { queueAccountMail } from '../accounts/account.service.js'
import { beginLoginAttempt, type LoginAttempt } from '../sessions/login-throttle.js'
import { startSession } from '../sessions/session.service.js'
import { findUserById } from '../users/user.repository.js'
import type { UserRow } from '../users/user.table.js'
import { acceptStep, countChallengeFailure, countRecoveryCodes, findActiveFactor, findLiveChallenge, insertChallenge, spendChallenge, spendRecoveryCode } from './mfa.repository.js'
import type { TotpFactorRow } from './mfa.tables.js'
import { hashRecoveryCode, normalRecoveryCode } from './recovery-codes.js'
import { SecretUnreadable, type SecretBox } from './secret-box.js'
import { stepOf } from './totp.js'

// A second factor at log-in (docs/accounts.md): a right password (or a provider's sign-in) for
// an account with an active factor makes a challenge instead of a session, answered as 401
// MFA_REQUIRED; POST /v1/sessions with the challenge and a code (or a recovery code) makes the
// session. Every refusal of a code is the same 401 INVALID_MFA_CODE, and counts as a failed
// log-in for the account's address (the log-in limits), so a challenge is no faster way to guess.

/** The context a factor's secret is sealed for: it opens only for its own account. */
export function secretContext (userId: bigint): string {
  return `totp:${userId}`
}

export function mfaRequired (challenge: { challenge: string, expiresAt: string }, headers: Record<string, string> = {}): ApiError {
  return new ApiError('MFA_REQUIRED', { details: challenge, headers })
}

function invalidCode (headers: Record<string, string>): ApiError {
  return new ApiError('INVALID_MFA_CODE', { headers })
}

/** The challenge for the account when it has an active factor (in the log-in's unit of work), else undefined. */
export async function challengeIfNeeded (trx: Executor, userId: bigint): Promise<{ challenge: string, expiresAt: string } | undefined> {
  if (await findActiveFactor(trx, userId) === undefined) return undefined
  return await insertChallenge(trx, userId)
}

/**
 * The factor's secret. One that does not open was sealed with another key (SECRET_KEY changed,
 * or the key file replaced): the server's fault, not the person's, so 503 and an alarm in the log.
 */
export function openSecret (box: SecretBox, factor: TotpFactorRow): Buffer {
  try {
    return box.open(factor.secret, secretContext(factor.user_id))
  } catch (error) {
    if (!(error instanceof SecretUnreadable)) throw error
    throw serviceUnavailable({ message: 'The second factor cannot be checked on this server. Try again later.', cause: error })
  }
}

export type CodeCheck = { kind: 'totp', step: number } | { kind: 'recovery', hash: string } | undefined

/**
 * What a code is for this factor: a TOTP code good now (its step), or text that can be a
 * recovery code (its hash; whether the account has it is decided when it is spent).
 */
export function checkCode (box: SecretBox, factor: TotpFactorRow, code: string, now = Date.now()): CodeCheck {
  const step = stepOf(openSecret(box, factor), code.trim(), now)
  if (step !== undefined) return { kind: 'totp', step }
  const recovery = normalRecoveryCode(code)
  return recovery === undefined ? undefined : { kind: 'recovery', hash: hashRecoveryCode(recovery) }
}

/**
 * Spends what the code checked as, in the caller's unit of work: the step (refused when it, or
 * a later one, was used already) or the recovery code (refused when the account has no such
 * code left). A used recovery code mails a notice to the account's address.
 */
export async function spendCode (trx: Executor, config: Config, user: UserRow, check: CodeCheck): Promise<boolean> {
  if (check === undefined) return false
  if (check.kind === 'totp') return await acceptStep(trx, user.id, check.step)
  if (!await spendRecoveryCode(trx, user.id, check.hash)) return false
  await queueAccountMail(trx, config, { kind: 'mfa-changed', userId: user.id, address: user.email, data: { name: user.name, what: 'recovery-code-used', remaining: String(await countRecoveryCodes(trx, user.id)) } })
  return true
}

/** Finishes a log-in that waits for its second factor: a session, or 401 INVALID_MFA_CODE. */
export async function completeChallenge (db: Db, config: Config, box: () => Promise<SecretBox>, body: { challenge: string, code: string }, client: string) {
  const challenge = await findLiveChallenge(db, body.challenge)
  const user = challenge === undefined ? undefined : await findUserById(db, challenge.user_id)
  const factor = user === undefined ? undefined : await findActiveFactor(db, user.id)
  // The key first: a server without one answers 503 before anything counts against the person.
  const secrets = factor === undefined ? undefined : await box()
  // Counted like a password: by the account's address from this client, by client, by account.
  // An unknown challenge counts against the client alone (its address key names no account).
  const attempt: LoginAttempt = await beginLoginAttempt(db, { email: user === undefined ? '' : emailKey(user.email), client, userId: user?.id }, {
    perEmail: config.loginFailuresPerEmail, perClient: config.loginFailuresPerClient, perAccount: config.loginFailuresPerAccount
  })
  if (challenge === undefined || user === undefined) throw invalidCode(attempt.headers(true))
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
    await write(db, async (trx) => { await countChallengeFailure(trx, challenge.id) })
    throw invalidCode(attempt.headers(true))
  }
  return { user, ...session, headers: attempt.headers(false) }
}

