import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { ApiError } from '../http/errors.js'
import { DEFAULT_LIMIT, PAGE_BYTES } from '../http/paging.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, errorResponses, LINK_HEADER, success } from '../http/schemas.js'
import { authenticate, currentUser, isAdmin } from '../sessions/authentication.js'
import { eventJson } from './event.json.js'
import { listEvents, numberEvents, readEventLog } from './event.repository.js'
import { EventTypeSchema } from './event.schemas.js'

export const EventFeedQuery = Type.Object({
  after: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'Events after this sequence: the `sequence` of the last event you processed. Absent: from the oldest event kept. Below the oldest kept, 410 EVENTS_EXPIRED.',
    examples: [1041]
  })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT, description: 'Events per page, 1 to 100 (default 20).' })),
  type: Type.Optional({ ...EventTypeSchema, description: 'Only events of this type.' })
})

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app

  app.get('/events', {
    onRequest: authenticate,
    schema: {
      tags: ['events'],
      operationId: 'listEvents',
      summary: 'Read the event feed, oldest first',
      description: 'Every change as an event, in commit order: `sequence` strictly increases, and an event that commits later always ' +
        'has a higher number than every event already readable, so reading on from the last `sequence` seen never skips one. ' +
        'An administrator reads every event; a user reads the events of their own account and orders, and the public ones ' +
        '(posts, products). Events are kept 30 days: an `after` older than that is 410 EVENTS_EXPIRED. When the page is full, ' +
        '`Link: <…>; rel="next"` gives the next one; otherwise poll again later with `after` = the last `sequence`.',
      security: [{ bearerAuth: [] }],
      querystring: EventFeedQuery,
      response: {
        200: success(Type.Array(Type.Unsafe({ $ref: 'Event' }), { maxItems: 100 }), { description: 'A page of events.', headers: LINK_HEADER }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'EVENTS_EXPIRED')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const limit = request.query.limit ?? DEFAULT_LIMIT
    const after = request.query.after === undefined ? undefined : BigInt(request.query.after)
    // Committed events get their numbers before the read (PostgreSQL), so a client sees its own change at once.
    await numberEvents(db)
    const log = await readEventLog(db)
    if (after !== undefined && after < log.prunedThrough) throw new ApiError('EVENTS_EXPIRED')
    const rows = await listEvents(db, {
      after: after ?? log.prunedThrough,
      limit,
      types: request.query.type === undefined ? undefined : [request.query.type],
      reader: isAdmin(user) ? 'all' : user.id
    })
    // Built from the stored JSON without parsing it; a page stops early past 1 MiB, as every list does.
    const items: string[] = []
    let bytes = 0
    for (const row of rows) {
      if (items.length > 0 && bytes >= PAGE_BYTES) break
      const json = eventJson(row)
      items.push(json)
      bytes += json.length
    }
    if (items.length === limit || items.length < rows.length) {
      const url = new URL(request.url, 'http://placeholder')
      url.searchParams.set('after', String(rows[items.length - 1]!.sequence))
      void reply.header('link', `<${url.pathname}${url.search}>; rel="next"`)
    }
    // Already JSON text: Fastify sends a string with a JSON content type as it is.
    const body = `[${items.join(',')}]` as unknown as never
    return await reply.type('application/json; charset=utf-8').send(body)
  })
}

export const eventRoutes = fp(routes, { name: 'events', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
