import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

/** An account's link to a provider's subject: the provider's stable id for the person. */
export interface IdentityTable {
  id: GeneratedId
  user_id: Int
  /** The provider's id in OIDC_PROVIDERS. */
  provider: string
  /** The ID token's `sub`: unique per provider, never reassigned. */
  subject: string
  /** The address the provider gave at the last sign-in, if any (shown, never used to find the account again). */
  email: string | null
  linked_at: Timestamp
}

export type IdentityRow = Selectable<IdentityTable>
