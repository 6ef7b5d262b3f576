import type { Selectable } from 'kysely'
import type { GeneratedId, Timestamp } from '../db/types.js'

export type Role = 'USER' | 'ADMIN'

export interface UserTable {
  id: GeneratedId
  email: string
  name: string
  password_hash: string
  role: Role
  created_at: Timestamp
  updated_at: Timestamp
}

export type UserRow = Selectable<UserTable>
