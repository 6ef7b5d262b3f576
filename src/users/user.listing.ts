import { Type, type Static } from '@sinclair/typebox'
import { listFingerprint, SortedPageQuery } from '../http/sorted-paging.js'
import { createdAtKey, createdAtSort, createdAtSortQuery, type CreatedAtSort } from '../http/created-range.js'
import type { FieldError } from '../http/errors.js'
import type { Role } from './user.table.js'

// What an administrator's list of accounts (GET /v1/users) can be asked: filters, combined with
// AND, and one of two sorts, each a keyset order over an index (migration 022): the creation
// time, then the id. `q` is found by trigrams (the same migration), hence its 3 characters.

const ROLES: readonly Role[] = ['USER', 'ADMIN']

export const UserListQuery = Type.Object({
  ...SortedPageQuery,
  q: Type.Optional(Type.String({ minLength: 3, maxLength: 254, 'x-well-formed': true, description: 'Only accounts whose address or name contains this text, in any case: 3 to 254 characters, spaces at either end ignored.', examples: ['example.com'] })),
  role: Type.Optional(Type.Unsafe<Role>({ type: 'string', enum: [...ROLES], description: 'Only accounts with this role: `USER` or `ADMIN`.', examples: ['ADMIN'] })),
  emailVerified: Type.Optional(Type.Boolean({ description: '`true`: only accounts whose address a mailed link proved; `false`: only those not yet proved.', examples: [false] })),
  ...createdAtSortQuery()
})
export type UserListQueryType = Static<typeof UserListQuery>

/** `q` without the spaces at its ends still has its 3 characters (checked with the schema's: validation.ts). */
export function userQueryRules (query: Record<string, unknown>): FieldError[] {
  if (typeof query.q === 'string' && [...query.q.trim()].length < 3) return [{ field: 'q', message: 'must have at least 3 characters besides spaces' }]
  return []
}

export interface UserListing {
  q?: string
  role?: Role
  emailVerified?: boolean
  sort: CreatedAtSort
  fingerprint: string
}

export function userListing (query: UserListQueryType): UserListing {
  const listing = { q: query.q?.trim(), role: query.role, emailVerified: query.emailVerified, sort: createdAtSort(query.sort) }
  return { ...listing, fingerprint: listFingerprint(listing) }
}

export const userCursorKey = createdAtKey
