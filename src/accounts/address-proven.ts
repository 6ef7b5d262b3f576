import { toApiKey } from '../api-keys/api-key.representation.js'
import { actingAs, SERVICE_ACTOR, type Actor } from '../events/actor.js'
import { credentialsRevoked } from '../auth/revocations.js'
import type { Db, Executor } from '../db/schema.js'
import { afterCommit } from '../db/write.js'
import { recordEvent } from '../events/event.repository.js'
import { deleteFactor } from '../mfa/mfa.repository.js'
import { deleteUserSessions } from '../sessions/session.repository.js'
import type { UserRow } from '../users/user.table.js'
import { updateAccount, type AccountChanges } from './account-update.js'
import { voidTokens } from './account-token.repository.js'

// The one step every path that proves an account's address takes: a verification link, a
// password reset, the operator naming it as ADMIN_EMAIL (docs/accounts.md, docs/SECURITY.md).
//
// Anyone can make an account for an address they do not hold (a sign-up, a provider that does
// not verify addresses) and prepare it for its owner: an API key, a webhook endpoint, a provider
// link, a second factor. When the owner later takes the account by a password reset (the
// documented way when sign-up says the address is taken), or the operator makes it the
// administrator's, all of that would otherwise stay and keep working for whoever set it up
// ("pre-hijacking": Sudhodanan and Paverd, USENIX Security 2022). So a proof that also hands
// the account to the prover, of an address that was never proven before, ends everything set up
// on it: whoever set it up had only claimed the address. A reset of an address proven before is
// the owner's own recovery and keeps the keys and the rest (only the sessions end).
//
// A verification link proves the address but not who holds the password: it marks the address
// proven and ends nothing (a new account verified by its own maker is the common case). The
// verification mail of a sign-up tells an owner who did not sign up to reset the password
// instead, which ends the maker's set-up.

export type Proof = 'verification' | 'reset' | 'operator'

/**
 * Ends everything set up on the account before (in the caller's unit of work, the account
 * locked): every session and event stream, API keys (each an `api_key.revoked` event), webhook
 * endpoints, provider identities, the second factor with its recovery codes and open challenges,
 * stream tickets, the addresses known to the log-in limits. The pending e-mail change is the
 * caller's to clear (proveAddress does).
 */
async function endSetUp (trx: Executor, db: Db, user: UserRow, actor: Actor): Promise<void> {
  await deleteUserSessions(trx, user.id)
  const keys = await trx.deleteFrom('api_keys').where('user_id', '=', user.id).returningAll().execute()
  for (const key of keys) await recordEvent(trx, { type: 'api_key.revoked', resourceId: key.id, audience: user.id, data: toApiKey(key), actor })
  await trx.deleteFrom('webhook_endpoints').where('user_id', '=', user.id).execute()
  await trx.deleteFrom('user_identities').where('user_id', '=', user.id).execute()
  await deleteFactor(trx, user.id)
  await trx.deleteFrom('stream_tickets').where('user_id', '=', user.id).execute()
  await trx.deleteFrom('known_login_clients').where('user_id', '=', user.id).execute()
  afterCommit(trx, () => { credentialsRevoked(db, { userId: user.id }) })
}

/**
 * Whether this proof hands the account to someone who may not be whoever set it up: a reset of
 * an address never proven before, the operator naming an account that is not yet an
 * administrator's (whoever holds it, the operator now decides who it is).
 */
function handsOver (user: UserRow, proof: Proof): boolean {
  switch (proof) {
    case 'verification': return false
    case 'reset': return Number(user.email_verified) === 0
    case 'operator': return user.role !== 'ADMIN'
  }
}

/**
 * The account's address is proven by `proof` (see the top of this file), with the other
 * `changes` the proof makes (a new password, a role); returns the account as it is now.
 */
export async function proveAddress (trx: Executor, db: Db, user: UserRow, proof: Proof, changes: AccountChanges = {}): Promise<UserRow> {
  // The person with the mailed link acts as the account; the operator's naming is the service's own.
  const actor = proof === 'operator' ? SERVICE_ACTOR : actingAs(user.id)
  if (!handsOver(user, proof)) return await updateAccount(trx, user, { ...changes, email_verified: 1 }, actor)
  await endSetUp(trx, db, user, actor)
  if (user.pending_email !== null) await voidTokens(trx, user.id, 'verify-email')
  return await updateAccount(trx, user, { ...changes, email_verified: 1, pending_email: null }, actor)
}
