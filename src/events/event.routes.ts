import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { write } from '../db/write.js'
import { wantsStream } from '../http/accepts-stream.js'
import { ApiError, validationError } from '../http/errors.js'
import { DEFAULT_LIMIT, PAGE_BYTES } from '../http/paging.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, COMMON_HEADERS, errorResponses, LINK_HEADER, success } from '../http/schemas.js'
import { requires } from '../auth/scopes.js'
import { authenticate, currentUser, isAdmin, stillValid, type CurrentUser } from '../auth/authentication.js'
import { createTicket } from '../auth/stream-ticket.repository.js'
import { EventStreams, type StreamCaller } from './event-stream.js'
import { eventJson } from './event.json.js'
import { listEvents, numberEvents, readEventLog } from './event.repository.js'
import { EventTypeSchema } from './event.schemas.js'

export const EventFeedQuery = Type.Object({
  after: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'Events after this sequence: the `sequence` of the last event you processed. Absent: from the oldest event kept (a stream: from the events committed after it opened). Below the oldest kept, 410 EVENTS_EXPIRED.',
    examples: [1041]
  })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT, description: 'Events per page, 1 to 100 (default 20); not for a stream.' })),
  type: Type.Optional({ ...EventTypeSchema, description: 'Only events of this type.' }),
  ticket: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A stream ticket (POST /v1/events/stream-tickets) instead of the Authorization header, for a browser\'s EventSource; only with `Accept: text/event-stream`.' }))
})

const FeedHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({
    pattern: '^(0|[1-9][0-9]{0,15})$',
    maxLength: 16,
    description: 'A stream\'s position: the `id` of the last event received, as a browser\'s EventSource sends it when it reconnects. It wins over `after`. Ignored by the JSON feed.'
  }))
})

const StreamTicket = Type.Object({
  ticket: Type.String({ description: 'Opens event streams of the caller for 5 minutes: `GET /v1/events?ticket=…` with `Accept: text/event-stream`. Any number of them (a browser reconnects with the same URL); a stream lives as long as the credential the ticket was made with.', examples: ['est_q2xWm0aZ5vLk8pQnRtY3q2xWm0aZ5vLk8pQnRtY3q2x'] }),
  expiresAt: Type.String({ format: 'date-time', description: 'When the ticket stops opening streams (a stream opened with it goes on).', examples: ['2026-11-27T10:05:00.000Z'] })
}, { additionalProperties: false })

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app
  const streams = new EventStreams({
    db,
    dialect: app.dialect,
    notifications: app.notifications,
    registry: app.metricsRegistry,
    log: app.log.child({ component: 'event-streams' }),
    logCompleted: (request, reply) => { app.accessLog.requestCompleted(null, request, reply) }
  })
  app.addHook('onReady', async () => { streams.start() })
  // Streams end as the shutdown begins, so browsers move to another instance (or wait for this
  // one to come back) while it still serves; any opened since end as it closes.
  app.drain.onBegin(() => { streams.endAll('shutdown') })
  app.addHook('preClose', async () => { streams.close() })
  app.decorate('eventStreams', streams)

  /** How a stream's credential is checked again, and which revocations end it: its session's, or its API key's. */
  function streamCaller (request: FastifyRequest, user: CurrentUser, reader: bigint | 'all'): StreamCaller {
    // A key that never expires: the stream lives until the key is revoked (checked every few seconds).
    const expiresAt = user.sessionExpiresAt === null ? new Date(8.64e15) : new Date(user.sessionExpiresAt)
    const key = request.apiKey
    if (key !== null) {
      return {
        userId: user.id,
        reader,
        expiresAt,
        stillValid: stillValid(request),
        // A password change leaves API keys (and their streams); an account deleted takes them.
        revokedBy: (revocation) => 'apiKeyId' in revocation
          ? revocation.apiKeyId === key.id
          : 'userId' in revocation && revocation.userId === user.id && revocation.keepSessionTokenHash === undefined
      }
    }
    const tokenHash = request.sessionTokenHash ?? ''
    return {
      userId: user.id,
      reader,
      expiresAt,
      stillValid: stillValid(request),
      revokedBy: (revocation) => 'sessionTokenHash' in revocation
        ? revocation.sessionTokenHash === tokenHash
        : 'userId' in revocation && revocation.userId === user.id && revocation.keepSessionTokenHash !== tokenHash
    }
  }

  app.get('/events', {
    // A stream may be opened with a ticket (`?ticket=`) instead of the header: authentication reads it.
    onRequest: authenticate,
    config: { streamTickets: true },
    schema: {
      tags: ['events'],
      operationId: 'listEvents',
      summary: 'Read the event feed, oldest first, or stream it live',
      description: 'Every change as an event, in commit order: `sequence` strictly increases, and an event that commits later always ' +
        'has a higher number than every event already readable, so reading on from the last `sequence` seen never skips one. ' +
        'An administrator reads every event; a user reads the events of their own account and orders, and the public ones ' +
        '(posts, products). Events are kept 30 days: an `after` older than that is 410 EVENTS_EXPIRED. When the page is full, ' +
        '`Link: <…>; rel="next"` gives the next one; otherwise poll again later with `after` = the last `sequence`.\n\n' +
        'With `Accept: text/event-stream` the answer is a live Server-Sent Events stream of the same events: `id` is the ' +
        'sequence, `event` the type, `data` the event as the feed gives it; first every event after `Last-Event-ID` (else ' +
        '`after`; neither: from now), then each new one as it commits, with no gap and no duplicate. A comment line comes at ' +
        'least every 15 s while idle. The stream ends when its credential expires or is revoked, and at a shutdown; reconnect ' +
        'with `Last-Event-ID` (a browser\'s EventSource does). A browser opens it with a ticket (`?ticket=`, from POST ' +
        '/v1/events/stream-tickets). At most 10 streams per user on an instance (429 TOO_MANY_STREAMS).',
      security: requires('events:read'),
      querystring: EventFeedQuery,
      headers: FeedHeaders,
      response: {
        200: Type.Unsafe({
          description: 'A page of events (application/json), or the live stream (text/event-stream).',
          headers: { ...COMMON_HEADERS, ...LINK_HEADER },
          content: {
            'application/json': { schema: Type.Array(Type.Unsafe({ $ref: 'Event' }), { maxItems: 100 }) },
            'text/event-stream': {
              schema: Type.String({ description: 'Server-Sent Events: `retry: 2000`, then per event `id: <sequence>`, `event: <type>`, `data: <the event as JSON, one line>` and a blank line; `: keep-alive` comments while idle.' }),
              example: 'retry: 2000\n\nid: 1042\nevent: order.created\ndata: {"id":"evt_…","sequence":1042,"type":"order.created",…}\n\n'
            }
          }
        }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'EVENTS_EXPIRED', 'TOO_MANY_STREAMS')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const stream = wantsStream(request)
    if (!stream && request.query.ticket !== undefined) {
      throw validationError([{ field: 'ticket', message: 'is only for an event stream (Accept: text/event-stream)' }])
    }
    const lastEventId = request.headers['last-event-id']
    const after = stream && typeof lastEventId === 'string' ? BigInt(lastEventId) : request.query.after === undefined ? undefined : BigInt(request.query.after)
    // Committed events get their numbers before the read (PostgreSQL), so a client sees its own change at once.
    await numberEvents(db)
    const log = await readEventLog(db)
    if (after !== undefined && after < log.prunedThrough) throw new ApiError('EVENTS_EXPIRED')
    const types = request.query.type === undefined ? undefined : [request.query.type]
    const reader = isAdmin(user) ? 'all' as const : user.id
    if (stream) {
      await streams.open(request, reply, streamCaller(request, user, reader), after, types)
      return reply
    }
    const limit = request.query.limit ?? DEFAULT_LIMIT
    const rows = await listEvents(db, { after: after ?? log.prunedThrough, limit, types, reader })
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

  app.post('/events/stream-tickets', {
    onRequest: authenticate,
    schema: {
      tags: ['events'],
      operationId: 'createStreamTicket',
      summary: 'Get a ticket to open event streams from a browser',
      description: 'A browser\'s EventSource cannot send an Authorization header, and a token in a URL ends up in logs and histories. ' +
        'A ticket is good for 5 minutes, only for opening the caller\'s own event streams (`GET /v1/events?ticket=…` with ' +
        '`Accept: text/event-stream`; no other operation takes it), and never logged. A stream opened with it lives as long ' +
        'as the credential that made the ticket. Once it has expired, ask for a new one and reopen with `after`.',
      security: requires('events:read'),
      response: {
        201: success(StreamTicket, { description: 'The ticket, shown only here.' }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE')
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const credential = request.apiKey === null ? { sessionTokenHash: request.sessionTokenHash ?? '' } : { apiKeyId: request.apiKey.id }
    const created = await write(db, async (trx) => await createTicket(trx, user.id, credential, new Date()))
    return await reply.code(201).send(created)
  })
}

export const eventRoutes = fp(routes, { name: 'events', dependencies: [...FEATURE_PREREQUISITES, 'drain', 'metrics', 'notifications'], encapsulate: true })
