import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import type { Executor } from '../db/schema.js'
import { write } from '../db/write.js'
import { nowIso } from '../db/types.js'
import { eventsCommitted } from '../events/committed.js'
import { newEventId, representationJson } from '../events/event.repository.js'
import { PING_TYPE } from '../events/event.types.js'
import { ApiError, validationError, type ErrorCode, type FieldError } from '../http/errors.js'
import { sendTagged } from '../http/etag.js'
import { guardedWrite } from '../http/guarded-write.js'
import { finishPage, pageRequest, PageQuerySchema } from '../http/paging.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfMatchHeaders, IfNoneMatchHeaders, LINK_HEADER, LOCATION_HEADER, NoContent, NotModified, ref, success } from '../http/schemas.js'
import { requireRecentSession } from '../auth/recent-authentication.js'
import { authenticate, currentUser, isAdmin } from '../auth/authentication.js'
import { newSecret } from './secret.js'
import { checkTarget, checkTargetUrl } from './target-guard.js'
import { toDelivery, toEndpoint } from './webhook.representation.js'
import { deleteEndpoint, findDelivery, findEndpoint, insertDeliveries, insertEndpoint, listDeliveries, listEndpoints, lockEndpoint, updateEndpoint, type NewDelivery } from './webhook.repository.js'
import { ALL_EVENTS, DeliveryParams, WebhookDelivery, WebhookEndpoint, WebhookEndpointCreateBody, WebhookEndpointPatchBody, WebhookEndpointWithSecret, WRITABLE_MEMBERS } from './webhook.schemas.js'
import type { WebhookEndpointRow } from './webhook.table.js'

const tags = ['webhooks']
/** A POST that takes no body still has its body read: these are what a body sent anyway can bring. */
const NO_BODY_ERRORS: ErrorCode[] = ['VALIDATION_ERROR', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']
/** How long the previous secret keeps signing after a rotation, so receivers can switch over. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000

/**
 * An endpoint the caller may see and manage: their own, or any for an administrator. Someone
 * else's is 404, as if it did not exist.
 */
function requireVisible (request: FastifyRequest, endpoint: WebhookEndpointRow | undefined): WebhookEndpointRow {
  const user = currentUser(request)
  if (endpoint === undefined || (endpoint.user_id !== user.id && !isAdmin(user))) throw new ApiError('WEBHOOK_ENDPOINT_NOT_FOUND')
  return endpoint
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app
  const policy = { allowHosts: app.config.webhooks.allowHosts }

  // What the URL's text alone refuses (scheme, credentials, an address literal in the
  // operator's network) is a field error found with the others, before any lookup or lock; a
  // name is resolved by checkUrl in the handler, a DNS lookup being too slow for validation.
  const urlRule = (body: Record<string, unknown>): FieldError[] => {
    const refusal = typeof body.url === 'string' ? checkTargetUrl(body.url, policy) : undefined
    return refusal === undefined ? [] : [{ field: 'url', message: refusal }]
  }

  /** The URL a client sent, refused (400 on `url`) when it could point into the operator's network. */
  async function checkUrl (url: string): Promise<void> {
    const refusal = await checkTarget(url, policy)
    if (refusal !== undefined) throw validationError([{ field: 'url', message: refusal }])
  }

  /** Queues one delivery (a ping, a redelivery), wakes the dispatcher and answers 202 with it. */
  async function queue (reply: FastifyReply, delivery: NewDelivery): Promise<FastifyReply> {
    const [row] = await write(db, async (trx) => await insertDeliveries(trx, [delivery]))
    eventsCommitted(db)
    return await reply.code(202).header('location', `/v1/webhook-endpoints/${row!.endpoint_id}/deliveries/${row!.id}`).send(toDelivery(row!))
  }

  const guardOf = (request: FastifyRequest, id: bigint) => ({
    lock: async (executor: Executor) => await lockEndpoint(executor, dialect, id),
    notFound: 'WEBHOOK_ENDPOINT_NOT_FOUND' as const,
    authorize: (row: WebhookEndpointRow) => { requireVisible(request, row) },
    representation: { schema: WebhookEndpoint, of: toEndpoint }
  })

  app.post('/webhook-endpoints', {
    onRequest: authenticate,
    config: { bodyRules: urlRule },
    schema: {
      tags,
      operationId: 'createWebhookEndpoint',
      summary: 'Register a webhook endpoint',
      description: 'Any user: the endpoint receives the events its owner may read in the feed (an administrator\'s, every event), ' +
        'of the types in `events`. The URL must be https on a public address: a private, loopback or link-local address ' +
        '(or a name resolving to one) is 400 on `url`, unless the operator allows that host. The signing secret is in this ' +
        'answer only. Made with a log-in token, it needs a recent one (403 REAUTHENTICATION_REQUIRED: POST /v1/sessions/current/reauthentication).',
      security: requires('webhooks:write'),
      body: ref(WebhookEndpointCreateBody),
      response: {
        201: success(WebhookEndpointWithSecret, { description: 'The endpoint, with its signing secret.', headers: { ...LOCATION_HEADER } }),
        ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'REAUTHENTICATION_REQUIRED')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const { url, events = [ALL_EVENTS], description = '', enabled = true } = request.body
    await requireRecentSession(request)
    await checkUrl(url)
    const row = await write(db, async (trx) => await insertEndpoint(trx, { userId: user.id, url, eventTypes: [...new Set(events)], description, enabled, secret: newSecret(), now: nowIso() }))
    return await reply.code(201).header('location', `/v1/webhook-endpoints/${row.id}`).send({ ...toEndpoint(row), secret: row.secret })
  })

  app.get('/webhook-endpoints', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints, newest first',
      description: 'A user\'s own endpoints; every endpoint for an administrator. Keyset paging as on every list.',
      security: requires('webhooks:read'),
      querystring: PageQuerySchema,
      response: {
        200: success(Type.Array(ref(WebhookEndpoint), { maxItems: 100 }), { description: 'A page of endpoints.', headers: LINK_HEADER, example: WebhookEndpoint.examples }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const page = pageRequest(request.query)
    const rows = await listEndpoints(db, isAdmin(user) ? undefined : user.id, page.limit + 1, page.before)
    return finishPage(request, reply, rows, page.limit, toEndpoint)
  })

  app.get('/webhook-endpoints/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'getWebhookEndpoint',
      summary: 'Read a webhook endpoint',
      description: 'Its owner or an administrator; someone else\'s is 404 WEBHOOK_ENDPOINT_NOT_FOUND. The secret is never shown again.',
      security: requires('webhooks:read'),
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: { 200: success(WebhookEndpoint, { description: 'The endpoint.', headers: ETAG_HEADER }), 304: NotModified, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'WEBHOOK_ENDPOINT_NOT_FOUND') }
    }
  }, async (request, reply) => {
    const row = requireVisible(request, await findEndpoint(db, BigInt(request.params.id)))
    return await sendTagged(request, reply, WebhookEndpoint, toEndpoint(row))
  })

  app.patch('/webhook-endpoints/:id', {
    onRequest: authenticate,
    config: { bodyRules: urlRule },
    schema: {
      tags,
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description: `Some of ${WRITABLE_MEMBERS.join(', ')}, by the same rules as on creation. \`enabled: true\` on an endpoint the service ` +
        'disabled clears `disabledReason`; its deliveries still pending resume. Honours If-Match. A new `url` with a log-in token needs a recent one (403 REAUTHENTICATION_REQUIRED).',
      security: requires('webhooks:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      consumes: ['application/json', 'application/merge-patch+json'],
      body: ref(WebhookEndpointPatchBody),
      response: {
        200: success(WebhookEndpoint, { description: 'The changed endpoint.', headers: ETAG_HEADER }),
        ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'REAUTHENTICATION_REQUIRED', 'PRECONDITION_FAILED')
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const { url, events, description, enabled } = request.body
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      // Resolving the name is slow: done before the transaction, never under the lock.
      prepare: async (endpoint) => {
        if (url === undefined || url === endpoint.url) return
        await requireRecentSession(request)
        await checkUrl(url)
      },
      write: async (trx) => await updateEndpoint(trx, id, {
        ...(url === undefined ? {} : { url }),
        ...(events === undefined ? {} : { event_types: JSON.stringify([...new Set(events)]) }),
        ...(description === undefined ? {} : { description }),
        ...(enabled === undefined ? {} : { enabled: enabled ? 1 : 0 }),
        ...(enabled === true ? { disabled_reason: null, failing_since: null } : {}),
        updated_at: nowIso()
      })
    })
  })

  app.delete('/webhook-endpoints/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint',
      description: 'With its delivery log; nothing more is sent to it. Honours If-Match.',
      security: requires('webhooks:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'WEBHOOK_ENDPOINT_NOT_FOUND', 'PRECONDITION_FAILED') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    return await guardedWrite(request, reply, { ...guardOf(request, id), write: async (trx) => { await deleteEndpoint(trx, id) } })
  })

  app.post('/webhook-endpoints/:id/rotate-secret', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'rotateWebhookEndpointSecret',
      summary: 'Rotate the signing secret',
      description: 'A new secret, shown in this answer only. For the next 24 hours every delivery carries two signatures, one per ' +
        'secret (space-separated in `webhook-signature`), so the receiver can switch secrets without missing one; then only the new one signs.',
      security: requires('webhooks:write'),
      params: IdParams,
      response: {
        200: success(WebhookEndpointWithSecret, { description: 'The endpoint, with its new secret.' }),
        ...errorResponses(...AUTH_ERRORS, ...NO_BODY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const row = await write(db, async (trx) => {
      const current = requireVisible(request, await lockEndpoint(trx, dialect, id))
      const now = Date.now()
      return await updateEndpoint(trx, id, {
        secret: newSecret(),
        previous_secret: current.secret,
        previous_secret_expires_at: new Date(now + ROTATION_OVERLAP_MS).toISOString(),
        updated_at: new Date(now).toISOString()
      })
    })
    return await reply.send({ ...toEndpoint(row), secret: row.secret })
  })

  app.post('/webhook-endpoints/:id/ping', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'pingWebhookEndpoint',
      summary: 'Send a test event',
      description: `Queues a \`${PING_TYPE}\` delivery to the endpoint, signed like any other, whatever its \`events\`; follow it in the delivery log. ` +
        'A disabled endpoint gets it once enabled again.',
      security: requires('webhooks:write'),
      params: IdParams,
      response: {
        202: success(WebhookDelivery, { description: 'The queued delivery.', headers: { ...LOCATION_HEADER } }),
        ...errorResponses(...AUTH_ERRORS, ...NO_BODY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const endpoint = requireVisible(request, await findEndpoint(db, BigInt(request.params.id)))
    const now = nowIso()
    const eventId = newEventId()
    const payload = representationJson({ id: eventId, type: PING_TYPE, occurredAt: now, resource: { type: 'webhook_endpoint', id: endpoint.id } })
    return await queue(reply, { endpointId: endpoint.id, eventId, eventType: PING_TYPE, payload, now })
  })

  app.get('/webhook-endpoints/:id/deliveries', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'listWebhookDeliveries',
      summary: 'The endpoint\'s delivery log, newest first',
      description: 'Each event sent to the endpoint, with its status, attempts, last answer or failure and timings; kept as long as events are. Keyset paging as on every list.',
      security: requires('webhooks:read'),
      params: IdParams,
      querystring: PageQuerySchema,
      response: {
        200: success(Type.Array(ref(WebhookDelivery), { maxItems: 100 }), { description: 'A page of deliveries.', headers: LINK_HEADER, example: WebhookDelivery.examples }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'WEBHOOK_ENDPOINT_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const endpoint = requireVisible(request, await findEndpoint(db, BigInt(request.params.id)))
    const page = pageRequest(request.query)
    const rows = await listDeliveries(db, endpoint.id, page.limit + 1, page.before)
    return finishPage(request, reply, rows, page.limit, toDelivery)
  })

  app.get('/webhook-endpoints/:id/deliveries/:deliveryId', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'getWebhookDelivery',
      summary: 'Read a delivery',
      security: requires('webhooks:read'),
      params: DeliveryParams,
      response: {
        200: success(WebhookDelivery, { description: 'The delivery.' }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'WEBHOOK_ENDPOINT_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FOUND')
      }
    }
  }, async (request) => {
    const endpoint = requireVisible(request, await findEndpoint(db, BigInt(request.params.id)))
    const delivery = await findDelivery(db, endpoint.id, BigInt(request.params.deliveryId))
    if (delivery === undefined) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND')
    return toDelivery(delivery)
  })

  app.post('/webhook-endpoints/:id/deliveries/:deliveryId/redeliver', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'redeliverWebhookDelivery',
      summary: 'Send a delivery again',
      description: 'Queues a new delivery of the same event (the same body and `webhook-id`, so a receiver that already processed it can tell), with its own attempts.',
      security: requires('webhooks:write'),
      params: DeliveryParams,
      response: {
        202: success(WebhookDelivery, { description: 'The new delivery.', headers: { ...LOCATION_HEADER } }),
        ...errorResponses(...AUTH_ERRORS, ...NO_BODY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const endpoint = requireVisible(request, await findEndpoint(db, BigInt(request.params.id)))
    const original = await findDelivery(db, endpoint.id, BigInt(request.params.deliveryId))
    if (original === undefined) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND')
    return await queue(reply, { endpointId: endpoint.id, eventId: original.event_id, eventType: original.event_type, payload: original.payload, now: nowIso() })
  })
}

export const webhookRoutes = fp(routes, { name: 'webhooks', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
