import { actingAs } from '../events/actor.js'
import type { Config } from '../config/config.js'
import { isUniqueViolation } from '../db/errors.js'
import type { Db, Executor } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { write } from '../db/write.js'
import { recordEvent } from '../events/event.repository.js'
import { emailKey, WHATWG_EMAIL } from '../http/email.js'
import { ApiError, serviceUnavailable, validationError } from '../http/errors.js'
import { queueAccountMail } from '../accounts/account.service.js'
import { NO_PASSWORD } from '../users/password.js'
import { findUserByEmail, findUserById, insertUser } from '../users/user.repository.js'
import { toUserAccount } from '../users/user.representation.js'
import type { UserRow } from '../users/user.table.js'
import { findIdentity, insertIdentity, updateIdentityEmail } from './identity.repository.js'
import { IdentityProviders, openidClient, ProviderRefused, ProviderUnavailable, type ProviderClaims } from './identity-providers.js'
import type { OidcProvider } from './oidc.config.js'
import { claimFlow, insertFlow, releaseFlow, spendFlow } from './oidc-flow.repository.js'

// Sign-in with an identity provider (docs/accounts.md): the authorization code flow with PKCE.
// The service begins a flow (POST /v1/oidc-authorizations) and finishes it (POST /v1/sessions
// with the provider's `code` and `state`); the client's page only carries the person there and
// back. Which account a sign-in is:
//   1. the one already linked to the provider's subject;
//   2. else the one whose address is the provider's, only when the provider says it verified the
//      address and the account proved it too: linking on an unproved address would let whoever
//      registered it first (on either side) take the account over;
//   3. else a new account, without a password, its address verified as the provider says.

const NAME_MAX = 20

function unknownProvider (): ApiError {
  return validationError([{ field: 'provider', message: 'is not an identity provider this service is configured with' }])
}

/** The provider's address, when it is one this service accepts (sign-up's rule and length). */
function usableEmail (email: string | undefined): string | undefined {
  return email !== undefined && email.length <= 254 && WHATWG_EMAIL.test(email) ? email : undefined
}

/** A new account's name: the provider's, else the address's local part; at most 20 characters, never blank. */
function nameFor (claims: ProviderClaims, email: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = (text: string) => [...text.replace(/[\u0000-\u001f\u007f]/g, '').trim()].slice(0, NAME_MAX).join('').trim()
  const fromProvider = claims.name === undefined ? '' : clean(claims.name)
  if (/\S/u.test(fromProvider)) return fromProvider
  const local = clean(email.split('@')[0] ?? '')
  return /\S/u.test(local) ? local : 'user'
}

export interface BegunSignIn {
  authorizationUrl: string
  expiresAt: string
}

/** Begins a sign-in: a new flow (PKCE verifier, state, nonce) kept for 10 minutes, and where to send the person. */
export async function beginSignIn (db: Db, providers: IdentityProviders, providerId: string, redirectUri: string): Promise<BegunSignIn> {
  const provider = providers.get(providerId)
  if (provider === undefined) throw unknownProvider()
  if (!provider.redirectUris.includes(redirectUri)) {
    throw validationError([{ field: 'redirectUri', message: 'is not one of the redirect addresses configured for this provider' }])
  }
  const client = await openidClient()
  const flow = { provider: provider.id, redirectUri, codeVerifier: client.randomPKCECodeVerifier(), state: client.randomState(), nonce: client.randomNonce() }
  const authorizationUrl = await providerStep(async () => await providers.authorizationUrl(provider, flow))
  const expiresAt = await write(db, async (trx) => await insertFlow(trx, flow))
  return { authorizationUrl: authorizationUrl.href, expiresAt: expiresAt.toISOString() }
}

/** A provider that cannot be used just now is 503 with Retry-After: the same request may succeed later. */
async function providerStep<T> (step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    if (error instanceof ProviderUnavailable) {
      throw serviceUnavailable({ message: 'The identity provider could not be reached. Try again later.', cause: error })
    }
    throw error
  }
}

/** A sign-in the provider confirmed: its flow (claimed, not yet spent) and what the provider says of the person. */
export interface ConfirmedSignIn {
  provider: OidcProvider
  flowId: bigint
  claims: ProviderClaims
}

const unknownFlow = (): ApiError => new ApiError('INVALID_TOKEN', { message: 'This sign-in is unknown, already finished or expired. Begin it again.' })

/**
 * The provider's half of finishing a sign-in: the flow claimed, and the code exchanged (by
 * openid-client, which checks the ID token). The account is found in the unit of work that
 * spends the flow (accountOfSignIn).
 */
export async function confirmSignIn (db: Db, config: Config, providers: IdentityProviders, body: { provider: string, code: string, state: string }): Promise<ConfirmedSignIn> {
  const provider = providers.get(body.provider)
  if (provider === undefined) throw unknownProvider()
  // Held for as long as an exchange can take: discovery, the token and the keys, each with its
  // time limit. An instance that dies holding it lets go when that time is over.
  const holdMs = (config.oidc.timeoutSeconds * 3 + 5) * 1000
  const flow = await write(db, async (trx) => await claimFlow(trx, provider.id, body.state, holdMs))
  if (flow === undefined) throw unknownFlow()
  try {
    const claims = await providerStep(async () => await providers.exchange(provider, { redirectUri: flow.redirect_uri, codeVerifier: flow.code_verifier, nonce: flow.nonce }, body.code, body.state))
    return { provider, flowId: flow.id, claims }
  } catch (error) {
    // A refused code or ID token ends the flow; an unreachable provider lets go of it, so the
    // same request can be sent again.
    if (error instanceof ProviderRefused) {
      await write(db, async (trx) => { await spendFlow(trx, flow.id) })
      throw new ApiError('INVALID_TOKEN', { message: 'The identity provider did not confirm this sign-in. Begin it again.', cause: error })
    }
    await write(db, async (trx) => { await releaseFlow(trx, flow.id) })
    throw error
  }
}

/**
 * In the sign-in's unit of work: spends the flow and answers the account the sign-in is (found,
 * linked or made; see the top of this file). Two first sign-ins of one person at once (two tabs)
 * meet in the unique indexes: the loser's unit is rolled back whole, flow included, and may run
 * once more (`isSimultaneousSignIn`), when it finds the link.
 */
export async function accountOfSignIn (trx: Executor, config: Config, signIn: ConfirmedSignIn): Promise<UserRow> {
  if (!await spendFlow(trx, signIn.flowId)) throw unknownFlow()
  return await accountFor(trx, config, signIn.provider, signIn.claims)
}

/** Whether a sign-in's unit of work failed only because a simultaneous one made the same account or link first. */
export function isSimultaneousSignIn (error: unknown): boolean {
  return isUniqueViolation(error) || (error instanceof ApiError && error.code === 'DUPLICATE_EMAIL')
}

/** The account this provider's subject signs in to (see the top of this file). */
async function accountFor (trx: Executor, config: Config, provider: OidcProvider, claims: ProviderClaims): Promise<UserRow> {
  const email = usableEmail(claims.email)
  const linked = await findIdentity(trx, provider.id, claims.subject)
  if (linked !== undefined) {
    if (linked.email !== (claims.email ?? null)) await updateIdentityEmail(trx, linked.id, claims.email ?? null)
    const user = await findUserById(trx, linked.user_id)
    if (user === undefined) throw new Error('an identity without its account')
    return user
  }
  const now = nowIso()
  if (email !== undefined && claims.emailVerified) {
    const existing = await findUserByEmail(trx, email)
    if (existing !== undefined && Number(existing.email_verified) === 1 && emailKey(existing.email) === emailKey(email)) {
      await insertIdentity(trx, { userId: existing.id, provider: provider.id, subject: claims.subject, email, now })
        .catch((error: unknown) => {
          if (!isUniqueViolation(error)) throw error
          // The account is linked to another subject of this provider: one link per provider.
          throw new ApiError('DUPLICATE_EMAIL', { message: 'The account with this e-mail address is already linked to another account at this identity provider.', cause: error })
        })
      // A new way into an existing account: its owner hears of it.
      await queueAccountMail(trx, config, { kind: 'identity-linked', userId: existing.id, address: existing.email, data: { name: existing.name, provider: provider.id } })
      return existing
    }
  }
  if (email === undefined) {
    throw validationError([{ field: 'provider', message: 'gave no usable e-mail address, which a new account needs' }])
  }
  // A new account; its address taken by another account (unproved on either side) is 409, as
  // at sign-up: proving it, then signing in again, links the two.
  const user = await insertUser(trx, { email, name: nameFor(claims, email), passwordHash: NO_PASSWORD, role: 'USER', emailVerified: claims.emailVerified, now })
    .catch((error: unknown) => {
      if (!(error instanceof ApiError) || error.code !== 'DUPLICATE_EMAIL') throw error
      throw new ApiError('DUPLICATE_EMAIL', { message: 'An account with this e-mail address exists. Log in to it and verify its address, then sign in with this provider again to link it.', cause: error })
    })
  await insertIdentity(trx, { userId: user.id, provider: provider.id, subject: claims.subject, email, now })
  await recordEvent(trx, { type: 'user.created', resourceId: user.id, audience: user.id, data: toUserAccount(user), actor: actingAs(user.id) })
  // As at sign-up: an address the provider did not verify gets the mail that proves it.
  if (!claims.emailVerified) await queueAccountMail(trx, config, { kind: 'verify-email', userId: user.id, address: user.email })
  return user
}
