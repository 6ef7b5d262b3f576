import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

/** What a mailed token is for: proving an address, or replacing a forgotten password. */
export type TokenPurpose = 'verify-email' | 'reset-password'

export interface AccountTokenTable {
  id: GeneratedId
  user_id: Int
  purpose: TokenPurpose
  /** SHA-256 of the token (auth/token.ts); the token itself is only ever in the mail. */
  token_hash: string
  /** The address the token was mailed to: what it proves. */
  email: string
  created_at: Timestamp
  expires_at: Timestamp
}

export type AccountTokenRow = Selectable<AccountTokenTable>
