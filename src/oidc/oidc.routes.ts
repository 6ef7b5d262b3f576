import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { authenticate, requireSelf, requireSelfOrAdmin } from '../auth/authentication.js'
import { requireRecentAuthentication } from '../auth/recent-authentication.js'
import { requires } from '../auth/scopes.js'
import { write } from '../db/write.js'
import { toIso } from '../db/types.js'
import { ApiError } from '../http/errors.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IdParams, NoContent, ref, success } from '../http/schemas.js'
import { hasPassword } from '../users/password.js'
import { findUserById, lockUser } from '../users/user.repository.js'
import { deleteIdentity, listIdentities } from './identity.repository.js'
import { beginSignIn } from './oidc.service.js'
import { Identity, OidcAuthorization, OidcAuthorizationBody, ProviderParams } from './oidc.schemas.js'
import type { IdentityRow } from './identity.table.js'

// Sign-in with an identity provider, begun here and finished at POST /v1/sessions; an account's
// linked providers, listed and unlinked by the account itself (docs/accounts.md).

function toIdentity (row: IdentityRow) {
  return { provider: row.provider, subject: row.subject, email: row.email, linkedAt: toIso(row.linked_at) }
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app

  app.post('/oidc-authorizations', {
    schema: {
      tags: ['sessions'],
      operationId: 'createOidcAuthorization',
      summary: 'Begin a sign-in with an identity provider',
      description: 'Begins the authorization code flow with PKCE at a configured provider and answers the address to send the person to. The provider sends them back to `redirectUri` with `code` and `state`; pass those with `provider` to POST /v1/sessions within 10 minutes. 503 when the provider cannot be reached.',
      security: [],
      body: ref(OidcAuthorizationBody),
      response: { 201: success(OidcAuthorization, { description: 'The sign-in is begun.' }), ...errorResponses(...BODY_ERRORS) }
    }
  }, async (request, reply) => {
    const begun = await beginSignIn(db, app.identityProviders, request.body.provider, request.body.redirectUri)
    return await reply.code(201).send(begun)
  })

  app.get('/users/:id/identities', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'listIdentities',
      summary: 'An account\'s identity providers',
      description: 'The identity providers the account signs in with, oldest link first (at most one per provider, so never paged). The account\'s owner or an administrator (who helps a user who cannot sign in); someone else is 403 ACCESS_DENIED.',
      security: requires('session'),
      params: IdParams,
      response: { 200: success(Type.Array(ref(Identity), { maxItems: 20 }), { description: 'The linked providers (at most one per configured provider, and at most 20 providers are configured).' }), ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'USER_NOT_FOUND', 'ACCESS_DENIED') }
    }
  }, async (request) => {
    const id = BigInt(request.params.id)
    if (await findUserById(db, id) === undefined) throw new ApiError('USER_NOT_FOUND')
    requireSelfOrAdmin(request, id)
    return (await listIdentities(db, id)).map(toIdentity)
  })

  app.delete('/users/:id/identities/:provider', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'deleteIdentity',
      summary: 'Unlink an identity provider',
      description: 'The account no longer signs in with this provider. 409 LAST_SIGN_IN_METHOD when it is the account\'s only way in (no password, no other provider). Needs a recent session (403 REAUTHENTICATION_REQUIRED: POST /v1/sessions/current/reauthentication).',
      security: requires('session'),
      params: ProviderParams,
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'USER_NOT_FOUND', 'ACCESS_DENIED', 'REAUTHENTICATION_REQUIRED', 'IDENTITY_NOT_FOUND', 'LAST_SIGN_IN_METHOD') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const { provider } = request.params
    if (await findUserById(db, id) === undefined) throw new ApiError('USER_NOT_FOUND')
    requireSelf(request, id)
    await requireRecentAuthentication(request)
    await write(db, async (trx) => {
      // Under the account's lock: two unlinks at once cannot each leave the other as the last way in.
      const user = await lockUser(trx, dialect, id)
      if (user === undefined) throw new ApiError('USER_NOT_FOUND')
      requireSelf(request, id)
      const identities = await listIdentities(trx, id)
      if (!identities.some((identity) => identity.provider === provider)) throw new ApiError('IDENTITY_NOT_FOUND')
      if (!hasPassword(user.password_hash) && identities.length === 1) throw new ApiError('LAST_SIGN_IN_METHOD')
      await deleteIdentity(trx, id, provider)
    })
    return await reply.code(204).send(null)
  })
}

export const oidcRoutes = fp(routes, { name: 'oidc', dependencies: [...FEATURE_PREREQUISITES, 'identity-providers'], encapsulate: true })
