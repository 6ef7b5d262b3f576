import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface SessionTable {
  id: GeneratedId
  user_id: Int
  token_hash: string
  created_at: Timestamp
  expires_at: Timestamp
}

// One row per failed log-in, per scope ('email' or 'client'); kept in the database so the
// limits hold across several instances.
export interface LoginFailureTable {
  id: GeneratedId
  scope: 'email' | 'client'
  key: string
  failed_at: Timestamp
}

