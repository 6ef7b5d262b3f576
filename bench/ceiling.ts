// The ceiling of this stack for a read (`npm run bench:ceiling`): a bare Fastify server that
// answers GET /v1/posts/{id} and GET /v1/products/{id} with the floor's statements (the service's
// SQL, bench/floor-sqlite.ts) and the service's representations, with the service's per-request
// features added in their most direct form, each turned on by name in CEILING_FEATURES (a comma
// list). With every feature on, it does what the service must do for
// such a read and nothing else: no plugins, no error catalogue, no data layer. The features use
// the service's own parts where the service has a part for exactly that (the request id, the log
// line, the request metrics, the rate limit's counting), so a rung costs what that part costs.
//
//   log       one structured line per request at info, through the service's logger settings and
//             log controller, to stdout (the bench sends it to a file), written synchronously
//   id        a request id (X-Request-Id in, or a random UUID) sent back in X-Request-Id, and the
//             service's time limits on requests and connections
//   tag       the compiled response serializer, then an ETag (SHA-1 of the bytes sent) and 304
//   metrics   the service's request counter and duration histogram, recorded per request
//   limit     the service's fixed-window rate limit, counting the client and sending its headers
//   validate  the path id checked by a route schema (Fastify's own validator)
//   nosniff   X-Content-Type-Options on every answer
//
//   CEILING_DATABASE_URL=file:…   CEILING_FEATURES=log,id,…   CEILING_PORT=…   node --import tsx bench/ceiling.ts
import Fastify, { type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { clientKey } from '../src/http/client-address.js'
import { FixedWindows } from '../src/pipeline/rate-limit.js'
import { genReqId } from '../src/pipeline/request-id.js'
import { lazyChildLogger } from '../src/pipeline/lazy-logger.js'
import { RequestLog } from '../src/pipeline/request-log.js'
import { RequestMetrics } from '../src/service/request-metrics.js'
import { POST_JSON, PRODUCT_JSON, readPost, readProduct, tagOf } from './ceiling-reads.js'

export const FEATURES = ['log', 'id', 'tag', 'metrics', 'limit', 'validate', 'nosniff'] as const
const on = new Set((process.env.CEILING_FEATURES ?? '').split(',').filter(Boolean))
for (const name of on) if (!(FEATURES as readonly string[]).includes(name)) throw new Error(`unknown ceiling feature ${name}`)

const options: FastifyServerOptions = on.has('log')
  ? { logger: { level: 'info', redact: ['req.headers.authorization', 'req.headers.cookie'] }, logController: new RequestLog(), childLoggerFactory: lazyChildLogger }
  : { logger: false }
if (on.has('id')) {
  Object.assign(options, {
    genReqId,
    requestTimeout: 30_000,
    http: { headersTimeout: 10_000, connectionsCheckingInterval: 1000 },
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000
  })
}
const app = Fastify(options)

if (on.has('id')) {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}
if (on.has('limit')) {
  const perMinute = 1_000_000
  const windows = new FixedWindows()
  const policy = `"default";q=${perMinute};w=60`
  app.addHook('onRequest', (request, reply, done) => {
    const now = Date.now()
    const window = windows.hit(clientKey(request.ip), now)
    const reset = Math.max(1, Math.ceil((window.endsAt - now) / 1000))
    reply.headers({ 'ratelimit-policy': policy, ratelimit: `"default";r=${Math.max(0, perMinute - window.count)};t=${reset}` })
    done()
  })
}
if (on.has('nosniff')) {
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff')
    done(null, payload)
  })
}
if (on.has('metrics')) {
  const metrics = new RequestMetrics()
  app.addHook('onResponse', (request, reply, done) => {
    metrics.record(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
}

// Serialised by the serializer Fastify compiles from the schema (once per schema object and route), as the service does.
function send (request: FastifyRequest, reply: FastifyReply, body: object, schema: Record<string, unknown>): FastifyReply {
  reply.type('application/json; charset=utf-8')
  if (!on.has('tag')) return reply.send(JSON.stringify(body))
  const json = reply.compileSerializationSchema(schema)(body as Record<string, unknown>)
  const tag = tagOf(json)
  reply.header('etag', tag)
  return request.headers['if-none-match'] === tag ? reply.code(304).send() : reply.send(json)
}

const byId = on.has('validate')
  ? { schema: { params: { type: 'object', properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' } }, required: ['id'] } } }
  : {}
type ById = FastifyRequest<{ Params: { id: string } }>

app.get('/v1/posts/:id', byId, async (request: ById, reply) => {
  const post = readPost(Number(request.params.id))
  if (post === undefined) return await reply.code(404).send({ code: 'POST_NOT_FOUND' })
  return send(request, reply, post, POST_JSON)
})
app.get('/v1/products/:id', byId, async (request: ById, reply) => {
  const product = readProduct(Number(request.params.id))
  if (product === undefined) return await reply.code(404).send({ code: 'PRODUCT_NOT_FOUND' })
  return send(request, reply, product, PRODUCT_JSON)
})
app.get('/health/ready', (_request, reply) => reply.send({ status: 'ok' }))

await app.listen({ port: Number(process.env.CEILING_PORT), host: '127.0.0.1' })

// Exits (not killed) on SIGTERM, so a profile (--cpu-prof) or a coverage report is written.
process.on('SIGTERM', () => { process.exit(0) })
