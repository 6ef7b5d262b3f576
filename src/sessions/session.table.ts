import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface SessionTable {
  id: GeneratedId
  user_id: Int
  token_hash: string
  created_at: Timestamp
  expires_at: Timestamp
  /** When the holder last proved who they are: the log-in, or a re-authentication since. */
  authenticated_at: Timestamp
}
