import { toIso } from '../db/types.js'
import type { UserRow } from './user.table.js'

export function toUserPublic (row: UserRow) {
  return { id: row.id, name: row.name }
}

export function toUserPrivate (row: UserRow) {
  return { id: row.id, email: row.email, name: row.name }
}

/** The ETag covers every stored member a user representation can show, so it changes with any of them. */
export function userTagSource (row: UserRow) {
  return { id: row.id, email: row.email, name: row.name, updatedAt: toIso(row.updated_at) }
}
