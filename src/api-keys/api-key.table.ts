import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface ApiKeyTable {
  id: GeneratedId
  user_id: Int
  name: string
  /** Space-separated. */
  scopes: string
  prefix: string
  key_hash: string
  created_at: Timestamp
  expires_at: Timestamp | null
  last_used_at: Timestamp | null
}
