import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export type MailKind = 'verify-email' | 'reset-password' | 'email-changed' | 'password-changed' | 'mfa-changed' | 'identity-linked' | 'api-key-created'
/** SKIPPED: nothing to send once it was time (no account has the address, or it needs no proof any more). */
export type MailStatus = 'PENDING' | 'SENT' | 'SKIPPED' | 'FAILED'

export interface MailOutboxTable {
  id: GeneratedId
  kind: MailKind
  user_id: Int | null
  address: string
  data: string
  message_id: string
  status: MailStatus
  attempts: Int
  next_attempt_at: Timestamp
  lease_until: Timestamp | null
  last_attempt_at: Timestamp | null
  last_error: string | null
  created_at: Timestamp
  completed_at: Timestamp | null
}

export type MailOutboxRow = Selectable<MailOutboxTable>
