import type { ColumnType, Selectable } from 'kysely'
import type { GeneratedId, Timestamp } from '../db/types.js'

export type Role = 'USER' | 'ADMIN'

export interface UserTable {
  id: GeneratedId
  email: string
  name: string
  password_hash: string
  role: Role
  /** 1 once a mailed token proved `email`. */
  email_verified: ColumnType<bigint | number, number | undefined, number>
  /** A new address waiting for its proof; `email` changes only then. */
  pending_email: ColumnType<string | null, string | null | undefined, string | null>
  created_at: Timestamp
  updated_at: Timestamp
  /** The avatar as the profile shows it (JSON; files/image.representation.ts), or null. */
  avatar: ColumnType<string | null, string | null | undefined, string | null>
}

export type UserRow = Selectable<UserTable>
