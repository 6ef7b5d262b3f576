import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Transaction } from 'kysely'
import type { Database } from '../db/schema.js'
import { write } from '../db/write.js'
import { authenticate, currentUser, isAdmin, requireSelfOrAdmin, type CurrentUser } from '../auth/authentication.js'
import { ApiError } from '../http/errors.js'
import { sendTagged, sendWithTag } from '../http/etag.js'
import { guardedWrite } from '../http/guarded-write.js'
import { answerPage } from '../http/paging.js'
import { sortedPage } from '../http/sorted-paging.js'
import { orderCursorKey, OrderListQuery, orderListing, orderQueryRules, type OrderListQueryType } from './order.listing.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfMatchHeaders, IfNoneMatchHeaders, LINK_HEADER, LOCATION_HEADER, NotModified, ref, success, withHeaders } from '../http/schemas.js'
import { findUserById } from '../users/user.repository.js'
import { HEADER as IDEMPOTENCY_HEADER, readKey, REPLAYED_HEADER, requestHash, runIdempotent } from './idempotency.js'
import { findOrderById, listOrders, lockOrder } from './order.repository.js'
import { parseStoredOrder, toOrder } from './order.representation.js'
import { IdempotencyKeyHeader, Order, OrderCreateBody, OrderPatchBody, type OrderType } from './order.schemas.js'
import { moveOrder, placeOrder } from './order.service.js'
import { authorizeTransition, canRead, type Requester } from './order.state.js'
import type { OrderRow } from './order.table.js'

const REPLAYED = { [REPLAYED_HEADER]: Type.Literal('true', { description: 'Present only on a replayed response: the first response to this Idempotency-Key, again.' }) }

function requesterOf (user: CurrentUser, order: OrderRow): Requester {
  return { isOwner: order.user_id === user.id, isAdmin: isAdmin(user) }
}

/**
 * The caller as the requester of an order it may see; an order it may not see (someone else's)
 * is 404 ORDER_NOT_FOUND, the same answer as a missing one, so its existence is not revealed.
 */
function requireVisible (user: CurrentUser, order: OrderRow): Requester {
  const requester = requesterOf(user, order)
  if (!canRead(requester)) throw new ApiError('ORDER_NOT_FOUND')
  return requester
}

async function sendCreated (reply: FastifyReply, order: OrderType, replayed: boolean): Promise<FastifyReply> {
  if (replayed) void reply.header(REPLAYED_HEADER, 'true')
  return await sendWithTag(reply.code(201).header('location', `/v1/orders/${order.id}`), Order, order)
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app
  const base = app.config.publicUrl

  app.post('/orders', {
    onRequest: authenticate,
    schema: {
      tags: ['orders'],
      operationId: 'createOrder',
      summary: 'Place an order',
      description: 'In one transaction: the product must exist (404 PRODUCT_NOT_FOUND), be on sale (409 PRODUCT_NOT_ON_SALE) and have ' +
        'at least `quantity` units (409 NOT_ENOUGH_STOCK); the units leave stock and the order is created PAID with ' +
        '`totalPrice = price × quantity`. `userId`, `status` and `totalPrice` are never taken from the client (read-only ' +
        'members are accepted and ignored). Send an `Idempotency-Key` to retry safely.',
      security: requires('orders:write'),
      headers: Type.Object({ [IDEMPOTENCY_HEADER]: Type.Optional(IdempotencyKeyHeader) }),
      body: ref(OrderCreateBody),
      response: {
        201: success(Order, {
          description: 'The order, created PAID; or, with `Idempotent-Replayed: true`, the first response to this Idempotency-Key again.',
          headers: { ...LOCATION_HEADER, ...ETAG_HEADER, ...REPLAYED }
        }),
        // A refusal on the stored state (no such product, not on sale, not enough stock) is
        // stored with the key and replayed too.
        ...withHeaders(errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'PRODUCT_NOT_FOUND', 'PRODUCT_NOT_ON_SALE', 'NOT_ENOUGH_STOCK',
          'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_USE'), [404, 409], REPLAYED)
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const key = readKey(request.headers)
    const productId = BigInt(request.body.productId)
    const { quantity } = request.body
    const create = async (trx: Transaction<Database>) =>
      ({ status: 201, body: toOrder(await placeOrder(trx, dialect, base, actorOf(request), user.id, productId, quantity)) })

    if (key === undefined) {
      const created = await write(db, create)
      return await sendCreated(reply, created.body, false)
    }
    // The fingerprint is what the request asks for: the same product and quantity (read-only
    // members, ignored anyway, and the order of members do not matter).
    const hash = requestHash(['POST /v1/orders', productId.toString(), quantity])
    const outcome = await runIdempotent(db, dialect, { userId: user.id, key, requestHash: hash }, create)
    if (!outcome.replayed) return await sendCreated(reply, outcome.response.body, false)
    return await sendCreated(reply, parseStoredOrder(outcome.body), true)
  })

  app.get('/orders/:id', {
    onRequest: authenticate,
    schema: {
      tags: ['orders'],
      operationId: 'getOrder',
      summary: 'Read an order (its owner or an admin)',
      description: 'Sends a strong ETag; with a current If-None-Match the answer is 304. Someone else\'s order is 404 ORDER_NOT_FOUND, as if it did not exist.',
      security: requires('orders:read'),
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: { 200: success(Order, { description: 'The order.', headers: ETAG_HEADER }), 304: NotModified, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'ORDER_NOT_FOUND') }
    }
  }, async (request, reply) => {
    const row = await findOrderById(db, BigInt(request.params.id))
    if (row === undefined) throw new ApiError('ORDER_NOT_FOUND')
    requireVisible(currentUser(request), row)
    return await sendTagged(request, reply, Order, toOrder(row))
  })

  app.patch('/orders/:id', {
    onRequest: authenticate,
    schema: {
      tags: ['orders'],
      operationId: 'updateOrder',
      summary: 'Cancel or ship an order',
      description: '`{"status": "CANCELED"}`: the owner or an admin, while the order is PAID (else 409 ORDER_CANNOT_CANCEL); the ' +
        'units go back to stock. `{"status": "SHIPPED"}`: an admin, from PAID (else 409 ORDER_CANNOT_SHIP). Other members of ' +
        'the representation are read-only: accepted and ignored. Someone else\'s order is 404 ORDER_NOT_FOUND, as if it did not exist. ' +
        'Checks run in this order: 404, 403, 412 (If-Match), 409.',
      security: requires('orders:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      consumes: ['application/json', 'application/merge-patch+json'],
      body: ref(OrderPatchBody),
      response: {
        200: success(Order, { description: 'The order in its new state.', headers: ETAG_HEADER }),
        ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'ORDER_NOT_FOUND', 'ACCESS_DENIED', 'PRECONDITION_FAILED', 'ORDER_CANNOT_CANCEL', 'ORDER_CANNOT_SHIP')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const id = BigInt(request.params.id)
    const target = request.body.status
    return await guardedWrite(request, reply, {
      lock: async (executor) => await lockOrder(executor, dialect, id),
      notFound: 'ORDER_NOT_FOUND',
      authorize: (order) => { authorizeTransition(target, requireVisible(user, order)) },
      representation: { schema: Order, of: toOrder },
      write: async (trx, order) => await moveOrder(trx, base, actorOf(request), order, target)
    })
  })

  const LIST_DESCRIPTION = 'Filters combine with AND: `status` (repeat for several), `productId`, `createdAfter` and `createdBefore` (RFC 3339, both excluded). ' +
    '`sort` is `-createdAt` (newest first, the default) or `createdAt`. Keyset paging: `limit` 1 to 100 (default 20); when more follow, ' +
    '`Link: <…>; rel="next"` gives the next page, whose cursor is valid only with the same sort and filters (else 400 CURSOR_MISMATCH).'
  const listResponse = success(Type.Array(ref(Order), { maxItems: 100 }), { description: 'A page of orders.', headers: LINK_HEADER, example: Order.examples })

  /** A page of the orders `owner` placed (everyone's when undefined), under the query's filters and sort. */
  async function listPage (request: FastifyRequest, query: OrderListQueryType, reply: FastifyReply, owner: bigint | undefined): Promise<OrderType[]> {
    const listing = orderListing(query)
    return answerPage(request, reply, await sortedPage(query, listing.fingerprint, orderCursorKey, (rows, position) => listOrders(db, dialect, listing, owner, rows, position), toOrder))
  }

  app.get('/orders', {
    onRequest: authenticate,
    config: { queryRules: orderQueryRules },
    schema: {
      tags: ['orders'],
      operationId: 'listOrders',
      summary: 'List orders: yours, or everyone\'s for an admin',
      description: `An admin lists every order; anyone else their own (the same list as GET /v1/users/{id}/orders with their id). ${LIST_DESCRIPTION}`,
      security: requires('orders:read'),
      querystring: OrderListQuery,
      response: { 200: listResponse, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'CURSOR_MISMATCH') }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    return await listPage(request, request.query, reply, isAdmin(user) ? undefined : user.id)
  })

  app.get('/users/:id/orders', {
    onRequest: authenticate,
    config: { queryRules: orderQueryRules },
    schema: {
      tags: ['orders'],
      operationId: 'listUserOrders',
      summary: 'List a user\'s orders (the user or an admin)',
      description: LIST_DESCRIPTION,
      security: requires('orders:read'),
      params: IdParams,
      querystring: OrderListQuery,
      response: { 200: listResponse, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'CURSOR_MISMATCH', 'USER_NOT_FOUND', 'ACCESS_DENIED') }
    }
  }, async (request, reply) => {
    const userId = BigInt(request.params.id)
    if (await findUserById(db, userId) === undefined) throw new ApiError('USER_NOT_FOUND')
    requireSelfOrAdmin(request, userId)
    return await listPage(request, request.query, reply, userId)
  })
}

export const orderRoutes = fp(routes, { name: 'orders', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
