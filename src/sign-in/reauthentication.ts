import type { Config } from '../config/config.js'
import type { Db } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { write } from '../db/write.js'
import { ApiError } from '../http/errors.js'
import { findActiveFactor } from '../mfa/mfa.repository.js'
import { checkCode, NOT_THE_CODE, spendCode } from '../mfa/mfa.service.js'
import type { SecretBox } from '../mfa/secret-box.js'
import { beginSignInAttempt } from '../limits/login-throttle.js'
import { markAuthenticated } from '../sessions/session.repository.js'
import { hasPassword, verifyAgainstDummy, verifyPassword } from '../users/password.js'
import type { UserRow } from '../users/user.table.js'

// POST /v1/sessions/current/reauthentication (docs/accounts.md): the holder of a session proves
// who they are again, with the password or a second-factor code, and the session is recent
// again (auth/recent-authentication.ts). A wrong one is 400 on its field (the caller is logged
// in, and a 401 would make client libraries drop the session) and counts as a failed log-in, so
// a stolen session is no way around the log-in limits. An account with neither a password nor
// a factor signs in with its provider again instead.

function wrongField (field: 'password' | 'code', message: string, headers: Record<string, string>): ApiError {
  return new ApiError('VALIDATION_ERROR', { errors: [{ field, message }], headers })
}

export async function reauthenticate (db: Db, config: Config, box: () => Promise<SecretBox>, session: { tokenHash: string, user: UserRow, client: string }, body: { password: string } | { code: string }): Promise<Record<string, string>> {
  const { user, client, tokenHash } = session
  if ('password' in body) {
    const attempt = await beginSignInAttempt(db, config, { email: user.email, client, userId: user.id })
    // An account without a password (made by a provider) takes the time of a wrong one.
    const right = hasPassword(user.password_hash) ? await verifyPassword(user.password_hash, body.password) : await verifyAgainstDummy(body.password)
    if (!right) throw wrongField('password', 'is not your password', attempt.headers(true))
    await write(db, async (trx) => {
      await attempt.succeeded(trx)
      await markAuthenticated(trx, tokenHash, nowIso())
    })
    return attempt.headers(false)
  }
  const factor = await findActiveFactor(db, user.id)
  // The key first: a server without one answers 503 before anything counts against the person.
  const secrets = factor === undefined ? undefined : await box()
  const attempt = await beginSignInAttempt(db, config, { email: user.email, client, userId: user.id })
  if (factor === undefined || secrets === undefined) throw wrongField('code', 'cannot prove anything: the account has no second factor; send your password', attempt.headers(true))
  const check = checkCode(secrets, factor, body.code)
  const refused = new Error('code refused')
  try {
    await write(db, async (trx) => {
      // A code is good once, here as at log-in: a code seen over someone's shoulder is spent.
      if (!await spendCode(trx, config, user, check)) throw refused
      await attempt.succeeded(trx)
      await markAuthenticated(trx, tokenHash, nowIso())
    })
  } catch (error) {
    if (error !== refused) throw error
    throw wrongField('code', NOT_THE_CODE, attempt.headers(true))
  }
  return attempt.headers(false)
}
