import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { noneMatch, serializerOf, tagOf } from '../http/etag.js'
import { trustForwardedFor } from './forwarded-for.js'
import { genReqId } from './request-id.js'

// The most common request of all, an anonymous GET of one post or product by its id, answered
// before Fastify's request path: Fastify's request and reply objects, its hooks and its reply's
// header and serialisation steps were most of the service's own cost on such a read, more than
// the floor's whole work (node:http, the statement, JSON.stringify: docs/PERFORMANCE.md). Every
// feature of the read stays on: the same representation serialised by the same compiled
// serializer, its strong ETag and 304, the request id, the rate limit, `nosniff`, the request
// metrics and the access line, the server's time limits.
//
// Only a request for which Fastify's path could do nothing more is taken: GET, the route's path
// with a canonical id and no query, no request body, none of the headers that need a step of
// the path (Authorization, Cookie, Origin), the service not draining, the client within its rate
// limit, and a row found; never with CORS configured (its headers are the CORS plugin's) or with
// the log at debug (which logs every arrival). Anything else (a 404, a 400, a 429, a HEAD, a
// database error) goes to Fastify's path untouched, which answers it as it answers every
// request: nothing is counted twice, since the rate limit is counted only once the fast answer is
// certain. That a fast answer is the one Fastify's path gives, byte for byte and header for
// header, access line and metrics included, is what test/pipeline/fast-reads.test.ts holds on
// both databases.

/**
 * One route answered here: `route` is Fastify's pattern (`/v1/posts/:id`); `find` the id's row,
 * at once where the database answers at once (SQLite: no promise between the statement and the
 * answer), else its promise; `present` the row's representation, by the named `schema`.
 */
export interface FastRead<Row> {
  route: string
  schema: TSchema
  find: (id: bigint) => Row | undefined | Promise<Row | undefined>
  present: (row: Row) => unknown
}

interface Registered { route: string, prefix: string, find: FastRead<unknown>['find'], present: FastRead<unknown>['present'], serialize: (value: unknown) => string }
interface Pending { app: FastifyInstance, read: FastRead<unknown> }

/** What the routes register (app.fastReads) and what the server factory answers with. */
export class FastReads {
  readonly #routes: Registered[] = []
  readonly #pending: Pending[] = []
  #app: FastifyInstance | undefined
  #clientAddress: ((req: IncomingMessage) => string | undefined) | undefined
  /** Whether this path answers at all: not at debug (every arrival is logged on Fastify's path), not with CORS on (its headers). */
  #on = false
  /** Requests answered here since the process started (the tests' evidence that this path ran). */
  answered = 0

  /** Answers the route's reads here once the app is ready; `app`: the route's own (its named schemas). */
  add<Row> (app: FastifyInstance, read: FastRead<Row>): void {
    this.#pending.push({ app, read: read as FastRead<unknown> })
  }

  /** The app whose parts (drain, rate limit, access line, logger) the fast answers use, once it is ready. */
  attach (app: FastifyInstance, trustProxy: string[]): void {
    // Compiled now that every named schema is registered, by the app's own compiler.
    for (const { app: context, read } of this.#pending.splice(0)) {
      const prefix = read.route.slice(0, read.route.lastIndexOf(':'))
      this.#routes.push({ route: read.route, prefix, find: read.find, present: read.present, serialize: serializerOf(context, read.schema) })
    }
    this.#app = app
    this.#on = app.log.level !== 'debug' && app.log.level !== 'trace' && app.config.corsOrigins.length === 0
    if (trustProxy.length > 0) {
      const trusted = proxyAddr.compile(trustProxy)
      // request.ip as Fastify computes it behind TRUST_PROXY, after the path's own first step.
      this.#clientAddress = (req) => {
        trustForwardedFor(req.headers)
        const addresses = proxyAddr.all(req, trusted)
        return addresses[addresses.length - 1]
      }
    }
  }

  /** The server's request listener: a fast answer, or Fastify's. */
  handler (fastify: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      const found = this.#routeOf(req)
      if (found === undefined) {
        fastify(req, res)
        return
      }
      const started = performance.now()
      let row: unknown
      try {
        row = found.route.find(found.id)
      } catch {
        // The database failed: Fastify's path reads again and answers as it answers any failure.
        fastify(req, res)
        return
      }
      if (row instanceof Promise) {
        row.then((resolved: unknown) => { this.#settle(req, res, found.route, resolved, started, fastify) }, () => { fastify(req, res) })
      } else {
        this.#settle(req, res, found.route, row, started, fastify)
      }
    }
  }

  /** The fast answer for the row found, or Fastify's path's when there is none or the request must go there after all. */
  #settle (req: IncomingMessage, res: ServerResponse, route: Registered, row: unknown, started: number, fastify: (req: IncomingMessage, res: ServerResponse) => void): void {
    try {
      if (row === undefined || !this.#answer(req, res, route, route.present(row), started)) fastify(req, res)
    } catch (error) {
      // An answer that could not be made before anything was sent: Fastify's path answers it.
      if (!res.headersSent) {
        fastify(req, res)
      } else {
        this.#app?.log.error({ err: error, url: req.url }, 'fast read failed after its headers were sent')
        res.destroy()
      }
    }
  }

  /** The route and id of a request this path may answer, or undefined. */
  #routeOf (req: IncomingMessage): { route: Registered, id: bigint } | undefined {
    const app = this.#app
    if (!this.#on || req.method !== 'GET' || app!.drain.draining) return undefined
    const headers = req.headers
    if (headers.authorization !== undefined || headers.cookie !== undefined ||
      headers.origin !== undefined ||
      headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return undefined
    const url = req.url ?? ''
    for (const route of this.#routes) {
      if (!url.startsWith(route.prefix)) continue
      const id = url.slice(route.prefix.length)
      if (CANONICAL_ID.test(id)) return { route, id: BigInt(id) }
    }
    return undefined
  }

  /** Sends the fast answer; false (nothing sent, nothing counted) when the request must go to Fastify after all. */
  #answer (req: IncomingMessage, res: ServerResponse, route: Registered, representation: unknown, started: number): boolean {
    const app = this.#app!
    // Draining may have begun while the row was read.
    if (app.drain.draining) return false
    const address = this.#clientAddress === undefined ? req.socket.remoteAddress : this.#clientAddress(req)
    if (address === undefined) return false
    // Everything that could fail comes before the request is counted, so that a request handed to
    // Fastify's path after all is counted there only.
    const json = route.serialize(representation)
    const etag = tagOf(json)
    const headers: Record<string, string | number> = {}
    if (app.rateLimiter !== undefined) {
      const fields = app.rateLimiter.countWithin(address)
      if (fields === undefined) return false
      Object.assign(headers, fields)
    }
    const id = genReqId(req)
    headers.etag = etag
    // A current If-None-Match: 304 with the same fields and no body, as etag.ts answers it.
    const status = noneMatch(req.headers['if-none-match'], etag) ? 304 : 200
    if (status === 200) headers['content-type'] = JSON_TYPE
    headers['x-request-id'] = id
    headers['x-content-type-options'] = 'nosniff'
    if (status === 200) headers['content-length'] = Buffer.byteLength(json)
    res.writeHead(status, headers)
    res.end(status === 200 ? json : undefined)
    this.answered++
    app.accessLog.answered(app.log, id, 'GET', req.url!, route.route, status, performance.now() - started, address)
    return true
  }
}

// Not an ES import of node:http, which would load the runtime's undici (test/server/builtin-imports.test.ts).
const { createServer } = process.getBuiltinModule('node:http')
const JSON_TYPE = 'application/json; charset=utf-8'
// Ids the route's schema accepts (1 to 2^63 − 1), written as the schema's pattern would write
// them: up to 18 digits, all below 2^63. Longer ones go to Fastify's path and its validation.
const CANONICAL_ID = /^[1-9][0-9]{0,17}$/

/**
 * Fastify's `serverFactory`: the HTTP server Fastify would make (its options and time limits),
 * whose request listener gives the fast reads their turn first.
 */
export function fastReadServer (fastReads: FastReads, options: { http: ServerOptions, keepAliveTimeout: number, requestTimeout: number, connectionTimeout: number }) {
  return (fastify: (req: IncomingMessage, res: ServerResponse) => void): Server => {
    const server = createServer(options.http, fastReads.handler(fastify))
    server.keepAliveTimeout = options.keepAliveTimeout
    server.requestTimeout = options.requestTimeout
    server.setTimeout(options.connectionTimeout)
    return server
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    fastReads: FastReads
  }
}

/** Starts answering the registered reads once the app is ready (every part it uses is registered by then). */
export const fastReads = fp<{ fastPath: FastReads, trustProxy: string[] }>(async (app, { fastPath, trustProxy }) => {
  app.decorate('fastReads', fastPath)
  app.addHook('onReady', async () => { fastPath.attach(app, trustProxy) })
}, { name: 'fast-reads', dependencies: ['drain', 'rate-limit'] })
