import type { GeneratedId, Timestamp } from '../db/types.js'

// One row per sign-up attempt that reached the handler, kept for the hour the limit looks back.
export interface SignupAttemptTable {
  id: GeneratedId
  client: string
  attempted_at: Timestamp
}
