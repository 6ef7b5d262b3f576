import type { GeneratedId, Int, Timestamp } from '../db/types.js'

// One row per failed log-in (kept for the 15-minute window), naming the e-mail as compared
// (emailKey) and the client address; kept in the database so the limits hold across instances.
export interface LoginFailureTable {
  id: GeneratedId
  email: string
  client: string
  failed_at: Timestamp
}

// An address the user logged in from: the per-account limit never refuses it for 30 days.
export interface KnownLoginClientTable {
  user_id: Int
  client: string
  last_login_at: Timestamp
}
