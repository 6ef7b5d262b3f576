import { proveAddress } from '../accounts/address-proven.js'
import { SERVICE_ACTOR } from '../events/actor.js'
import { voidTokens } from '../accounts/account-token.repository.js'
import { dialectOfHandle } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { write } from '../db/write.js'
import { ApiError } from '../http/errors.js'
import { deleteUserSessions } from '../sessions/session.repository.js'
import { hashPassword, verifyPassword } from './password.js'
import { recordEvent } from '../events/event.repository.js'
import { findUserByEmail, insertUser, lockUser } from './user.repository.js'
import { toUserAccount } from './user.representation.js'

/** A valid user name from the e-mail's local part: at most 20 code points, never blank. */
function nameFor (email: string): string {
  const local = [...(email.split('@')[0] ?? '')].slice(0, 20).join('')
  return /\S/u.test(local) ? local : 'admin'
}

/**
 * ADMIN_EMAIL / ADMIN_PASSWORD: makes sure that user exists with role ADMIN and that password,
 * creating it or promoting and re-keying an existing account.
 *
 * - An existing account that is not an administrator's is the operator's now, whoever made it:
 *   everything set up on it before (sessions, API keys, webhook endpoints, provider links, the
 *   second factor) ends, and its address counts as proven (accounts/address-proven.ts). A
 *   squatter who registered the address first keeps nothing of it.
 * - Re-keying an administrator revokes its sessions: they were opened with the old password.
 * - An admin that already has this role and password is left alone ('unchanged'), so that a
 *   restart does not log the admin out.
 * - Several instances may start at once: losing the race to create the user means promoting it.
 */
export async function ensureAdmin (db: Db, email: string, password: string): Promise<'created' | 'updated' | 'unchanged'> {
  const passwordHash = await hashPassword(password)
  const existing = await findUserByEmail(db, email)
  if (existing === undefined) {
    try {
      await write(db, async (trx) => {
        const user = toUserAccount(await insertUser(trx, { email, name: nameFor(email), passwordHash, role: 'ADMIN', now: nowIso() }))
        await recordEvent(trx, { type: 'user.created', resourceId: user.id, audience: user.id, data: user, actor: SERVICE_ACTOR })
      })
      return 'created'
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'DUPLICATE_EMAIL')) throw error
    }
  }
  const found = existing ?? await findUserByEmail(db, email)
  if (found === undefined) throw new Error('ensureAdmin: the account vanished while being promoted')
  if (found.role === 'ADMIN' && Number(found.email_verified) === 1 && await verifyPassword(found.password_hash, password)) return 'unchanged'
  await write(db, async (trx) => {
    // Under the account's lock: another instance promoting it at once waits, then finds it done.
    const user = await lockUser(trx, dialectOfHandle(db), found.id)
    if (user === undefined) throw new Error('ensureAdmin: the account vanished while being promoted')
    await proveAddress(trx, db, user, 'operator', { role: 'ADMIN', password_hash: passwordHash })
    await deleteUserSessions(trx, user.id)
    // Links mailed before prove nothing about who holds the account now.
    await voidTokens(trx, user.id, 'reset-password')
  })
  return 'updated'
}
