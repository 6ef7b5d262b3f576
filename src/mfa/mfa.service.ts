import type { Config } from '../config/config.js'
import type { Executor } from '../db/schema.js'
import { ApiError, serviceUnavailable } from '../http/errors.js'
import { queueAccountMail } from '../accounts/account.service.js'
import type { UserRow } from '../users/user.table.js'
import { acceptStep, countRecoveryCodes, spendRecoveryCode } from './mfa.repository.js'
import type { TotpFactorRow } from './mfa.tables.js'
import { hashRecoveryCode, normalRecoveryCode } from './recovery-codes.js'
import { SecretUnreadable, type SecretBox } from './secret-box.js'
import { stepOf } from './totp.js'

// Checking and spending a second factor's codes (docs/accounts.md), wherever one is asked for:
// the second step of a sign-in (sign-in/challenge-sign-in.ts), a re-authentication, the
// factor's removal.

/** What a refused code is told, wherever one is asked for (a 400 on the field `code`). */
export const NOT_THE_CODE = 'is not a current code of your authenticator app'

/** The context a factor's secret is sealed for: it opens only for its own account. */
export function secretContext (userId: bigint): string {
  return `totp:${userId}`
}

export function mfaRequired (challenge: { challenge: string, expiresAt: string }, headers: Record<string, string> = {}): ApiError {
  return new ApiError('MFA_REQUIRED', { details: challenge, headers })
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
