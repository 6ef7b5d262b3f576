// The ceiling's features without Fastify (`npm run bench:ceiling`, the rung before the service): node:http
// answering GET /v1/posts/{id} and GET /v1/products/{id} with the floor's statements, the
// service's representations and every feature of bench/ceiling.ts in its most direct form, so
// that the ladder says what Fastify's request path costs once the features are on, and so what
// a read could cost on a request path of the service's own making:
//
//   log       the access line, member for member the service's (pipeline/request-log.ts), batched
//             the same way (20 ms or 16 KiB) and handed to pino's destination on stdout
//   id        the service's request id (X-Request-Id in, or a random UUID) sent back, and its
//             time limits on requests and connections (the options Fastify gives node:http)
//   tag       the representation written by JSON.stringify (as the service's fast reads write
//             theirs), an ETag (SHA-1 of the bytes sent) and 304
//   metrics   the service's request counter and duration histogram
//   limit     the service's fixed-window rate limit, counting the client and sending its headers
//   validate  the path id checked against the route schema's pattern
//   nosniff   X-Content-Type-Options on every answer
//
//   CEILING_DATABASE_URL=file:…   CEILING_PORT=…   node --import tsx bench/ceiling-http.ts
import { hostname } from 'node:os'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import pino from 'pino'
import { clientKey } from '../src/http/client-address.js'
import { FixedWindows } from '../src/pipeline/rate-limit.js'
import { genReqId } from '../src/pipeline/request-id.js'
import { RequestMetrics } from '../src/service/request-metrics.js'
import { readPost, readProduct, tagOf } from './ceiling-reads.js'

const ID = /^[1-9][0-9]{0,15}$/
const JSON_TYPE = 'application/json; charset=utf-8'

// The access line (pipeline/request-log.ts), to pino's own destination, in the same batches.
const destination = pino.destination({ dest: 1, sync: true })
const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`
const PLAIN = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/
const quoted = (value: string): string => PLAIN.test(value) ? `"${value}"` : JSON.stringify(value)
let pending = ''
let timer: NodeJS.Timeout | undefined
const flush = (): void => {
  clearTimeout(timer)
  timer = undefined
  if (pending === '') return
  destination.write(pending)
  pending = ''
}
function logLine (id: string, req: IncomingMessage, route: string, status: number, ms: number): void {
  if (pending === '') {
    timer = setTimeout(flush, 20)
    timer.unref()
  }
  pending += `{"level":30,"time":${Date.now()}${base},"reqId":${quoted(id)},"method":"${req.method}","url":${quoted(req.url ?? '')}` +
    `,"route":"${route}","statusCode":${status},"responseTime":${ms},"remoteAddress":${quoted(req.socket.remoteAddress ?? '')},"msg":"request completed"}\n`
  if (pending.length >= 16 * 1024) flush()
}

const metrics = new RequestMetrics()
const perMinute = 1_000_000
const windows = new FixedWindows()
const policy = `"default";q=${perMinute};w=60`

function answer (req: IncomingMessage, res: ServerResponse, started: number, route: string, status: number, json: string, headers: Record<string, string | number>): void {
  const id = genReqId(req)
  const now = Date.now()
  const window = windows.hit(clientKey(req.socket.remoteAddress ?? ''), now)
  headers['ratelimit-policy'] = policy
  headers.ratelimit = `"default";r=${Math.max(0, perMinute - window.count)};t=${Math.max(1, Math.ceil((window.endsAt - now) / 1000))}`
  headers['x-request-id'] = id
  headers['x-content-type-options'] = 'nosniff'
  res.writeHead(status, headers)
  res.end(json)
  const ms = performance.now() - started
  metrics.record('GET', route, status, ms / 1000)
  logLine(id, req, route, status, ms)
}

function tagged (req: IncomingMessage, res: ServerResponse, started: number, route: string, json: string): void {
  const etag = tagOf(json)
  if (req.headers['if-none-match'] === etag) answer(req, res, started, route, 304, '', { etag })
  else answer(req, res, started, route, 200, json, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(json), etag })
}

const server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000, connectionsCheckingInterval: 1000, keepAliveTimeout: 72_000 }, (req, res) => {
  const started = performance.now()
  const url = req.url ?? ''
  if (req.method === 'GET' && url.startsWith('/v1/posts/')) {
    const id = url.slice('/v1/posts/'.length)
    if (!ID.test(id)) { answer(req, res, started, '/v1/posts/:id', 400, '{}', {}); return }
    const post = readPost(Number(id))
    if (post === undefined) { answer(req, res, started, '/v1/posts/:id', 404, '{"code":"POST_NOT_FOUND"}', {}); return }
    tagged(req, res, started, '/v1/posts/:id', JSON.stringify(post))
  } else if (req.method === 'GET' && url.startsWith('/v1/products/')) {
    const id = url.slice('/v1/products/'.length)
    if (!ID.test(id)) { answer(req, res, started, '/v1/products/:id', 400, '{}', {}); return }
    const product = readProduct(Number(id))
    if (product === undefined) { answer(req, res, started, '/v1/products/:id', 404, '{"code":"PRODUCT_NOT_FOUND"}', {}); return }
    tagged(req, res, started, '/v1/products/:id', JSON.stringify(product))
  } else if (url === '/health/ready') {
    res.writeHead(200, { 'content-type': JSON_TYPE })
    res.end('{"status":"ok"}')
  } else {
    res.writeHead(404, { 'content-length': 0 })
    res.end()
  }
})
server.keepAliveTimeout = 72_000
server.listen(Number(process.env.CEILING_PORT), '127.0.0.1')

// Exits (not killed) on SIGTERM, so a profile (--cpu-prof) is written and the last lines are.
process.on('SIGTERM', () => { flush(); process.exit(0) })
