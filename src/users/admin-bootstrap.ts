import type { Db } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { hashPassword } from './password.js'
import { findUserByEmail, insertUser, setAdmin } from './user.repository.js'

/**
 * ADMIN_EMAIL / ADMIN_PASSWORD: makes sure that user exists with role ADMIN and that password,
 * creating it or promoting and re-keying an existing account.
 */
export async function ensureAdmin (db: Db, email: string, password: string): Promise<'created' | 'updated'> {
  const passwordHash = await hashPassword(password)
  const existing = await findUserByEmail(db, email)
  if (existing !== undefined) {
    await setAdmin(db, existing.id, passwordHash, nowIso())
    return 'updated'
  }
  const name = (email.split('@')[0] ?? 'admin').slice(0, 20) || 'admin'
  await insertUser(db, { email, name, passwordHash, role: 'ADMIN', now: nowIso() })
  return 'created'
}
