import type { Config } from '../config/config.js'
import type { Executor } from '../db/schema.js'
import { ApiError } from '../http/errors.js'
import { mfaRequired } from '../mfa/mfa.service.js'
import { findActiveFactor, insertChallenge } from '../mfa/mfa.repository.js'
import type { LoginAttempt } from '../limits/login-throttle.js'
import { startSession } from '../sessions/session.service.js'
import type { UserRow } from '../users/user.table.js'

// The one way into an account (docs/accounts.md). Whatever proved the person (a password, a
// provider's sign-in), what happens next is decided here, once, so that a rule added here
// holds for every way of signing in:
//   1. an unverified address under REQUIRE_EMAIL_VERIFICATION: no session (403);
//   2. an account with a second factor: a challenge, answered by a code (401 MFA_REQUIRED),
//      whose right code makes the session (challenge-sign-in.ts);
//   3. else a session.
// The log-in limits' attempt (a password's) is settled in the same unit of work: cleared when
// the sign-in is complete, only this attempt taken back while a code is still asked for.

export type Admission =
  | { kind: 'session', session: { token: string, expiresAt: string } }
  | { kind: 'challenge', challenge: { challenge: string, expiresAt: string } }
  | { kind: 'unverified' }

/** Admits the account in the caller's unit of work (see the top of this file). */
export async function admit (trx: Executor, config: Config, user: UserRow, attempt?: LoginAttempt): Promise<Admission> {
  const factor = await findActiveFactor(trx, user.id)
  if (config.requireEmailVerification && Number(user.email_verified) === 0) {
    // No session until the address is proven. The attempt's failures are cleared, unless a
    // second factor is on: then only its code may clear them.
    await (factor === undefined ? attempt?.succeeded(trx) : attempt?.forgive(trx))
    return { kind: 'unverified' }
  }
  if (factor !== undefined) {
    await attempt?.forgive(trx)
    return { kind: 'challenge', challenge: await insertChallenge(trx, user.id) }
  }
  await attempt?.succeeded(trx)
  return { kind: 'session', session: await startSession(trx, config, user.id) }
}

/** The session an admission made, or (once its unit of work committed) the refusal it stands for. */
export function admitted (admission: Admission, headers: Record<string, string> = {}): { token: string, expiresAt: string } {
  switch (admission.kind) {
    case 'session': return admission.session
    case 'challenge': throw mfaRequired(admission.challenge, headers)
    case 'unverified': throw new ApiError('EMAIL_NOT_VERIFIED', { headers })
  }
}
