import type { Int, Timestamp } from '../db/types.js'

/** Stream tickets (auth/stream-ticket.repository.ts): a ticket's hash, its user and the credential that made it. */
export interface StreamTicketTable {
  ticket_hash: string
  user_id: Int
  session_token_hash: string | null
  api_key_id: Int | null
  created_at: Timestamp
  expires_at: Timestamp
}
