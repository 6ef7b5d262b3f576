import type { Selectable } from 'kysely'
import type { GeneratedId, Timestamp } from '../db/types.js'

/** A sign-in begun at a provider and not yet finished (oidc-flow.repository.ts). */
export interface OidcFlowTable {
  id: GeneratedId
  /** SHA-256 of the `state` sent to the provider; the state itself goes only to the client. */
  state_hash: string
  provider: string
  redirect_uri: string
  /** The PKCE verifier: sent once, with the code, to the provider's token endpoint. */
  code_verifier: string
  /** The nonce the ID token must carry. */
  nonce: string
  /** Until when one request holds the flow to exchange its code (null: nobody). */
  claimed_until: Timestamp | null
  created_at: Timestamp
  expires_at: Timestamp
}

export type OidcFlowRow = Selectable<OidcFlowTable>
