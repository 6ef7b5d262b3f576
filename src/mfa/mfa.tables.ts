import type { ColumnType, Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export type FactorStatus = 'PENDING' | 'ACTIVE'

/** An account's TOTP factor (at most one). */
export interface TotpFactorTable {
  id: GeneratedId
  user_id: Int
  /** The 160-bit secret, sealed (mfa/secret-box.ts) for this account. */
  secret: string
  status: FactorStatus
  /** The last 30-second step a code was accepted for: a code of it or an earlier step is refused. */
  last_used_step: ColumnType<bigint | null, bigint | number | null | undefined, bigint | number | null>
  created_at: Timestamp
  activated_at: Timestamp | null
}

/** A recovery code not yet used: only its SHA-256. */
export interface RecoveryCodeTable {
  id: GeneratedId
  user_id: Int
  code_hash: string
}

/** A log-in waiting for its second factor. */
export interface MfaChallengeTable {
  id: GeneratedId
  user_id: Int
  /** SHA-256 of the challenge; the challenge itself is only in the log-in's answer. */
  challenge_hash: string
  /** Wrong codes so far; the fifth voids the challenge. */
  failures: ColumnType<bigint | number, number | undefined, number>
  created_at: Timestamp
  expires_at: Timestamp
}

export type TotpFactorRow = Selectable<TotpFactorTable>
export type MfaChallengeRow = Selectable<MfaChallengeTable>
