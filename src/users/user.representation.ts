import type { UserRow } from './user.table.js'

/** What anyone may read: `GET /v1/users/{id}` shows it, and its ETag is a hash of exactly it. */
export function toUserPublic (row: UserRow) {
  return { id: row.id, name: row.name }
}

/**
 * What only the user sees (sign-up, PUT). `If-Match` on PUT and DELETE compares against this
 * representation's tag, so a stale e-mail is caught too; the tag is only ever sent beside the e-mail.
 */
export function toUserPrivate (row: UserRow) {
  return { id: row.id, email: row.email, name: row.name }
}
