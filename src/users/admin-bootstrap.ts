import type { Db } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { write } from '../db/write.js'
import { ApiError } from '../http/errors.js'
import { deleteUserSessions } from '../sessions/session.repository.js'
import { hashPassword, verifyPassword } from './password.js'
import { recordEvent } from '../events/event.repository.js'
import { findUserByEmail, insertUser, setAdmin } from './user.repository.js'
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
 * - Promoting or re-keying revokes the account's sessions: they were opened by whoever held the
 *   address and the old password, and must not become an admin's.
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
        await recordEvent(trx, { type: 'user.created', resourceId: user.id, audience: user.id, data: user })
      })
      return 'created'
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'DUPLICATE_EMAIL')) throw error
    }
  }
  const user = existing ?? await findUserByEmail(db, email)
  if (user === undefined) throw new Error('ensureAdmin: the account vanished while being promoted')
  if (user.role === 'ADMIN' && Number(user.email_verified) === 1 && await verifyPassword(user.password_hash, password)) return 'unchanged'
  await write(db, async (trx) => {
    await setAdmin(trx, user.id, passwordHash, nowIso())
    await deleteUserSessions(trx, user.id)
  })
  return 'updated'
}
