import type { UserRow } from './user.table.js'
import type { ListedUserRow } from './user.repository.js'
import { toIso } from '../db/types.js'

/** What anyone may read: `GET /v1/users/{id}` shows it, and its ETag is a hash of exactly it. */
export function toUserPublic (row: UserRow) {
  return { id: row.id, name: row.name }
}

/** What only the user sees, as sign-up shows it. */
export function toUserPrivate (row: UserRow) {
  return { id: row.id, email: row.email, name: row.name }
}

/**
 * The user as the user sees it after a change (PUT, events): with the state of its address.
 * `If-Match` on PUT and DELETE compares against this representation's tag (sign-up's ETag is
 * this one's too), so a stale e-mail is caught; the tag is only ever sent beside the e-mail.
 */
export function toUserAccount (row: UserRow) {
  return { id: row.id, email: row.email, name: row.name, emailVerified: Number(row.email_verified) === 1, pendingEmail: row.pending_email }
}

/** A user of an administrator's list (GET /v1/users). */
export function toManagedUser (row: ListedUserRow) {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    emailVerified: Number(row.email_verified) === 1,
    pendingEmail: row.pending_email,
    mfaEnabled: row.mfa_enabled === true || Number(row.mfa_enabled) === 1,
    createdAt: toIso(row.created_at)
  }
}
