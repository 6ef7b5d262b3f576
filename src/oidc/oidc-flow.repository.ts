import { hashToken } from '../auth/token.js'
import type { Executor } from '../db/schema.js'
import type { OidcFlowRow } from './oidc-flow.table.js'

// A sign-in flow is kept in the database, not in the instance that began it, so that a client
// sent back by the provider may finish it on any instance. It is found by its `state` (of which
// only the SHA-256 is kept), lives 10 minutes, is finished by one request at a time, and is
// spent by the sign-in that finishes it.

export const FLOW_LIFETIME_MS = 10 * 60 * 1000

export interface NewFlow {
  state: string
  provider: string
  redirectUri: string
  codeVerifier: string
  nonce: string
}

/** Records a flow (and clears the expired ones); returns when it expires. */
export async function insertFlow (trx: Executor, flow: NewFlow, now = new Date()): Promise<Date> {
  const expiresAt = new Date(now.getTime() + FLOW_LIFETIME_MS)
  await trx.deleteFrom('oidc_flows').where('expires_at', '<=', now.toISOString()).execute()
  await trx.insertInto('oidc_flows').values({
    state_hash: hashToken(flow.state),
    provider: flow.provider,
    redirect_uri: flow.redirectUri,
    code_verifier: flow.codeVerifier,
    nonce: flow.nonce,
    created_at: now.toISOString(),
    expires_at: expiresAt.toISOString()
  }).execute()
  return expiresAt
}

/**
 * Takes the live flow of this state for one exchange of its code, for `holdMs`: of requests
 * finishing the same flow at once, one gets it, and the others find nothing, as for a used
 * state. Undefined when the state is unknown, expired, spent, of another provider, or held.
 */
export async function claimFlow (trx: Executor, provider: string, state: string, holdMs: number, now = new Date()): Promise<OidcFlowRow | undefined> {
  return await trx.updateTable('oidc_flows')
    .set({ claimed_until: new Date(now.getTime() + holdMs).toISOString() })
    .where('state_hash', '=', hashToken(state)).where('provider', '=', provider).where('expires_at', '>', now.toISOString())
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now.toISOString())]))
    .returningAll().executeTakeFirst()
}

/** Lets go of a claimed flow whose exchange could not be made (the provider was unreachable), so the same request can be sent again. */
export async function releaseFlow (trx: Executor, id: bigint): Promise<void> {
  await trx.updateTable('oidc_flows').set({ claimed_until: null }).where('id', '=', id).execute()
}

/** Spends the flow; false when it was already spent. */
export async function spendFlow (trx: Executor, id: bigint): Promise<boolean> {
  const result = await trx.deleteFrom('oidc_flows').where('id', '=', id).executeTakeFirst()
  return result.numDeletedRows > 0n
}
