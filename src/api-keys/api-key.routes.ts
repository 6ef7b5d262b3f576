import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../events/actor.js'
import { Type } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { afterCommit, write } from '../db/write.js'
import { nowIso } from '../db/types.js'
import { recordEvent } from '../events/event.repository.js'
import { ApiError, validationError, type FieldError } from '../http/errors.js'
import { sendTagged } from '../http/etag.js'
import { finishPage, pageRequest, PageQuerySchema } from '../http/paging.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfNoneMatchHeaders, LINK_HEADER, LOCATION_HEADER, NoContent, NotModified, ref, success } from '../http/schemas.js'
import { authenticate, currentUser, isAdmin } from '../auth/authentication.js'
import { requireRecentAuthentication } from '../auth/recent-authentication.js'
import { queueAccountMail } from '../accounts/account.service.js'
import { credentialsRevoked } from '../auth/revocations.js'
import { hashToken } from '../auth/token.js'
import { lockUser } from '../users/user.repository.js'
import { countLiveKeys, deleteApiKey, findApiKey, insertApiKey, listApiKeys } from './api-key.repository.js'
import { toApiKey } from './api-key.representation.js'
import { ApiKey, ApiKeyCreateBody, ApiKeyWithSecret, MAX_LIVE_KEYS } from './api-key.schemas.js'
import { newKey } from '../auth/api-key-format.js'
import { ADMIN_SCOPES, requires, SCOPES, type Scope } from '../auth/scopes.js'

// API keys (docs/api-keys.md): every operation here needs a log-in token, so a key never makes,
// lists or revokes keys. A user sees only their own keys, administrators included; someone
// else's is 404, as if it did not exist.

const tags = ['api-keys']
const security = requires('session')

/** An expiry in the future. (A scope the owner does not hold is checked with the owner, in the handler.) */
function bodyRules (body: Record<string, unknown>): FieldError[] {
  if (typeof body.expiresAt !== 'string') return []
  const at = Date.parse(body.expiresAt)
  return Number.isFinite(at) && at <= Date.now() ? [{ field: 'expiresAt', message: 'must be in the future' }] : []
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app

  app.post('/api-keys', {
    onRequest: authenticate,
    config: { bodyRules },
    schema: {
      tags,
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description: 'A key for a program: it acts as you, limited to its scopes. The key is in this answer only; only its hash is kept. ' +
        `A scope you do not hold (products:write is for administrators) is 400 on that \`scopes\` item. At most ${MAX_LIVE_KEYS} live keys ` +
        'per account (409 TOO_MANY_API_KEYS). Needs a log-in token, a recent one (403 REAUTHENTICATION_REQUIRED: POST /v1/sessions/current/reauthentication); a notice with the key\'s name and scopes is mailed to the account.',
      security,
      body: ref(ApiKeyCreateBody),
      response: {
        201: success(ApiKeyWithSecret, { description: 'The key, with its secret, shown once.', headers: { ...LOCATION_HEADER } }),
        ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'REAUTHENTICATION_REQUIRED', 'TOO_MANY_API_KEYS')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const { name, scopes, expiresAt } = request.body
    const unheld = scopes.flatMap((scope, i) => ADMIN_SCOPES.has(scope as Scope) && !isAdmin(user) ? [{ field: `scopes.${i}`, message: 'is for administrators only' }] : [])
    if (unheld.length > 0) throw validationError(unheld)
    // A key outlives the session that made it: a stolen session must not be able to mint one.
    await requireRecentAuthentication(request)
    const { key, prefix } = newKey()
    // Stored in the order of the list of scopes, whatever order they were sent in.
    const ordered = SCOPES.filter((scope) => scopes.includes(scope))
    const row = await write(db, async (trx) => {
      const now = nowIso()
      // Two creates at once count each other: the owner's row is the lock (PostgreSQL; SQLite writes one at a time).
      await lockUser(trx, dialect, user.id)
      if (await countLiveKeys(trx, user.id, now) >= MAX_LIVE_KEYS) throw new ApiError('TOO_MANY_API_KEYS')
      const created = await insertApiKey(trx, { userId: user.id, name, scopes: ordered, prefix, keyHash: hashToken(key), now, expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString() })
      await recordEvent(trx, { type: 'api_key.created', resourceId: created.id, audience: user.id, data: toApiKey(created), actor: actorOf(request) }, now)
      await queueAccountMail(trx, app.config, { kind: 'api-key-created', userId: user.id, address: user.email, data: { name: user.name, keyName: name, scopes: ordered.join(' '), prefix } })
      return created
    })
    return await reply.code(201).header('location', `/v1/api-keys/${row.id}`).send({ ...toApiKey(row), key })
  })

  app.get('/api-keys', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'listApiKeys',
      summary: 'List your API keys, newest first',
      description: 'Your own keys, expired ones included (administrators too see only their own). Never the secrets. Keyset paging as on every list. Needs a log-in token.',
      security,
      querystring: PageQuerySchema,
      response: {
        200: success(Type.Array(ref(ApiKey), { maxItems: 100 }), { description: 'A page of keys.', headers: LINK_HEADER, example: ApiKey.examples }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const page = pageRequest(request.query)
    const rows = await listApiKeys(db, user.id, page.limit + 1, page.before)
    return finishPage(request, reply, rows, page.limit, toApiKey)
  })

  app.get('/api-keys/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'getApiKey',
      summary: 'Read one of your API keys',
      description: 'Never the secret. Someone else\'s key, or a revoked one, is 404 API_KEY_NOT_FOUND. Needs a log-in token.',
      security,
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: { 200: success(ApiKey, { description: 'The key.', headers: ETAG_HEADER }), 304: NotModified, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'API_KEY_NOT_FOUND') }
    }
  }, async (request, reply) => {
    const row = await findApiKey(db, currentUser(request).id, BigInt(request.params.id))
    if (row === undefined) throw new ApiError('API_KEY_NOT_FOUND')
    return await sendTagged(request, reply, ApiKey, toApiKey(row))
  })

  app.delete('/api-keys/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      description: 'At once, on every instance: the next request made with it is 401, and its event streams end. The key is gone ' +
        '(404 on its id afterwards). Needs a log-in token.',
      security,
      params: IdParams,
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'API_KEY_NOT_FOUND') }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const id = BigInt(request.params.id)
    await write(db, async (trx) => {
      const row = await findApiKey(trx, user.id, id)
      if (row === undefined) throw new ApiError('API_KEY_NOT_FOUND')
      await deleteApiKey(trx, id)
      await recordEvent(trx, { type: 'api_key.revoked', resourceId: id, audience: user.id, data: toApiKey(row), actor: actorOf(request) })
      afterCommit(trx, () => { credentialsRevoked(db, { apiKeyId: id }) })
    })
    return await reply.code(204).send(null)
  })
}

export const apiKeyRoutes = fp(routes, { name: 'api-keys', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
