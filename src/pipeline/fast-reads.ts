import type { IncomingMessage, OutgoingHttpHeader, Server, ServerOptions, ServerResponse } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { soon } from '../db/compiled.js'
import { noneMatch, tagOf } from '../http/etag.js'
import { nextPageLink, type Page } from '../http/paging.js'
import { trustForwardedFor } from './forwarded-for.js'
import { genReqId } from './request-id.js'

// The most common requests of all, an anonymous GET of one post or product by its id and of a
// page of the posts or the products, answered before Fastify's request path: Fastify's request
// and reply objects, its hooks and its reply's header and serialisation steps were most of the
// service's own cost on such a read, more than the floor's whole work (node:http, the statement,
// JSON.stringify: docs/PERFORMANCE.md). Every feature of the read stays on: the same
// representation, written to the same text (by JSON.stringify, from the representation built for
// it: one native call writes flat text, where the schema's serializer builds it piece by piece,
// flattened again before it could be measured, hashed and sent), a read's strong ETag and 304, a
// list's next-page Link, the request id, the rate limit, `nosniff`, the request metrics and the
// access line, the server's time limits.
//
// Only a request for which Fastify's path could do nothing more is taken: GET, the route's path
// with a canonical id and no query (a read), or with no query but a canonical `limit` (1 to 100)
// and a `cursor` (a list); no request body, none of the headers that need a step of the path
// (Authorization, Cookie, Origin), the service not draining, the client within its rate limit,
// a row found (a read) or a cursor of this list (a list); never with CORS configured (its
// headers are the CORS plugin's) or with the log at debug (which logs every arrival). Anything
// else (a 404, a 400, a 429, a HEAD, a cursor of another list, a database error) goes to
// Fastify's path untouched, which answers it as it answers every request: nothing is counted
// twice, since the rate limit is counted only once the fast answer is certain. That a fast
// answer is the one Fastify's path gives, byte for byte and header for header, access line and
// metrics included, is what test/pipeline/fast-reads.test.ts holds on both databases.

/**
 * A read by id answered here: `route` is Fastify's pattern (`/v1/posts/:id`); `find` the id's
 * row, at once where the database answers at once (SQLite: no promise between the statement and
 * the answer), else its promise; `present` the row's representation built for JSON.stringify
 * (http/json-numbers.ts), which writes it as the route's schema's serializer writes the route's
 * own (each resource's tests hold the two texts equal); a RangeError there, an integer a JSON
 * number cannot hold, leaves the read to Fastify's path.
 */
export interface FastRead<Row> {
  route: string
  find: (id: bigint) => Row | undefined | Promise<Row | undefined>
  present: (row: Row) => unknown
}

/**
 * A list answered here when asked for with `limit` and `cursor` only: `route` is its path
 * (`/v1/posts`), `page` the route's own reading of the page (a query as Fastify's validation
 * leaves it), at once where the database answers at once, else its promise; a page that fails (a
 * cursor of another list, an integer a JSON number cannot hold) is the route's to answer. Its
 * items are built for JSON.stringify, as a read's row is.
 */
export interface FastList {
  route: string
  page: (query: ListQuery) => Page<unknown> | Promise<Page<unknown>>
}

/** The query a list is taken with: nothing but these two, each at most once. */
export interface ListQuery { limit?: number, cursor?: string }

/** What a route answers, found: the body, and the next page's Link for a list. */
interface Found { body: unknown, link?: string }

interface Registered {
  route: string
  /** Whether the answer carries the body's ETag (and a current If-None-Match gets a 304): a read, not a list. */
  tagged: boolean
  /** The request's argument when its URL is one this route takes here, else undefined. */
  match: (url: string) => unknown
  /** The answer, or undefined (no such row) for Fastify's path to answer; at once or its promise. */
  read: (argument: unknown, url: string) => Found | undefined | Promise<Found | undefined>
}

/** What the routes register (app.fastReads) and what the server factory answers with. */
export class FastReads {
  readonly #routes: Registered[] = []
  #app: FastifyInstance | undefined
  #clientAddress: ((req: IncomingMessage) => string | undefined) | undefined
  /** Whether this path answers at all: not at debug (every arrival is logged on Fastify's path), not with CORS on (its headers). */
  #on = false
  /** Requests answered here since the process started (the tests' evidence that this path ran). */
  answered = 0

  /** Answers the route's reads by id here once the app is ready. */
  addRead<Row> (read: FastRead<Row>): void {
    const prefix = read.route.slice(0, read.route.lastIndexOf(':'))
    const found = (row: Row | undefined): Found | undefined => row === undefined ? undefined : { body: read.present(row) }
    this.#routes.push({
      route: read.route,
      tagged: true,
      match: (url) => {
        if (!url.startsWith(prefix)) return undefined
        const id = url.slice(prefix.length)
        return CANONICAL_ID.test(id) ? BigInt(id) : undefined
      },
      read: (id) => soon(read.find(id as bigint), found)
    })
  }

  /** Answers the list's pages asked for with `limit` and `cursor` only here once the app is ready. */
  addList (list: FastList): void {
    this.#routes.push({
      route: list.route,
      tagged: false,
      match: (url) => listQuery(url, list.route),
      read: (query, url) => soon(list.page(query as ListQuery), (page) =>
        page.next === undefined ? { body: page.items } : { body: page.items, link: nextListLink(url, list.route.length, query as ListQuery, page.next) })
    })
  }

  /** The app whose parts (drain, rate limit, access line, logger) the fast answers use, once it is ready. */
  attach (app: FastifyInstance, trustProxy: string[]): void {
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
      const route = this.#routeOf(req)
      if (route === undefined) {
        fastify(req, res)
        return
      }
      const started = performance.now()
      let found: Found | undefined | Promise<Found | undefined>
      try {
        found = route.route.read(route.argument, req.url!)
      } catch {
        // The database failed, or the answer holds an integer a JSON number cannot hold:
        // Fastify's path reads again and answers as it answers any request.
        fastify(req, res)
        return
      }
      if (found instanceof Promise) {
        found.then((resolved) => { this.#settle(req, res, route.route, resolved, started, fastify) }, () => { fastify(req, res) })
      } else {
        this.#settle(req, res, route.route, found, started, fastify)
      }
    }
  }

  /** The fast answer for what was found, or Fastify's path's when nothing was or the request must go there after all. */
  #settle (req: IncomingMessage, res: ServerResponse, route: Registered, found: Found | undefined, started: number, fastify: (req: IncomingMessage, res: ServerResponse) => void): void {
    try {
      if (found === undefined || !this.#answer(req, res, route, found, started)) fastify(req, res)
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

  /** The route of a request this path may answer and the route's argument for it, or undefined. */
  #routeOf (req: IncomingMessage): { route: Registered, argument: unknown } | undefined {
    const app = this.#app
    if (!this.#on || req.method !== 'GET' || app!.drain.draining) return undefined
    const headers = req.headers
    if (headers.authorization !== undefined || headers.cookie !== undefined ||
      headers.origin !== undefined ||
      headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return undefined
    const url = req.url ?? ''
    for (const route of this.#routes) {
      const argument = route.match(url)
      if (argument !== undefined) return { route, argument }
    }
    return undefined
  }

  /** Sends the fast answer; false (nothing sent, nothing counted) when the request must go to Fastify after all. */
  #answer (req: IncomingMessage, res: ServerResponse, route: Registered, found: Found, started: number): boolean {
    const app = this.#app!
    // Draining may have begun while the row was read.
    if (app.drain.draining) return false
    const address = this.#clientAddress === undefined ? req.socket.remoteAddress : this.#clientAddress(req)
    if (address === undefined) return false
    // Everything that could fail comes before the request is counted, so that a request handed to
    // Fastify's path after all is counted there only.
    const json = JSON.stringify(found.body)
    const etag = route.tagged ? tagOf(json) : undefined
    // The fields as node:http's writeHead takes them flat (name, value, name, value…): no object
    // grown member by member on every answer, which went through the runtime's slow paths.
    const headers: OutgoingHttpHeader[] = []
    const limiter = app.rateLimiter
    if (limiter !== undefined) {
      const rateLimit = limiter.countWithin(address)
      if (rateLimit === undefined) return false
      headers.push('ratelimit-policy', limiter.policy, 'ratelimit', rateLimit)
    }
    const id = genReqId(req)
    if (found.link !== undefined) headers.push('link', found.link)
    if (etag !== undefined) headers.push('etag', etag)
    // A current If-None-Match: 304 with the same fields and no body, as etag.ts answers it.
    const status = etag !== undefined && noneMatch(req.headers['if-none-match'], etag) ? 304 : 200
    if (status === 200) headers.push('content-type', JSON_TYPE)
    headers.push('x-request-id', id, 'x-content-type-options', 'nosniff')
    if (status === 200) headers.push('content-length', Buffer.byteLength(json))
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
// A list's query as its schema reads it and would not change: `limit` written as the schema's
// integer 1 to 100 is written, a cursor's characters (base64url) within its maximum length.
const LIST_PARAMETER = /^(?:limit=([1-9][0-9]?|100)|cursor=([A-Za-z0-9_-]{1,1200}))$/
const CURSOR_VALUE = /^[A-Za-z0-9_-]+$/

/** `limit` and `cursor` of a URL of the list at `path` asking for nothing else, each at most once; else undefined. */
export function listQuery (url: string, path: string): ListQuery | undefined {
  if (!url.startsWith(path)) return undefined
  if (url.length === path.length) return {}
  if (url[path.length] !== '?') return undefined
  const query: ListQuery = {}
  const pairs = url.slice(path.length + 1).split('&')
  if (pairs.length > 2) return undefined
  for (const pair of pairs) {
    const parameter = LIST_PARAMETER.exec(pair)
    if (parameter === null) return undefined
    if (parameter[1] !== undefined) {
      if (query.limit !== undefined) return undefined
      query.limit = Number(parameter[1])
    } else {
      if (query.cursor !== undefined) return undefined
      query.cursor = parameter[2]
    }
  }
  return query
}

/**
 * The next page's Link for a URL listQuery took, as nextPageLink writes it: the URL with its
 * `cursor` pair given the next cursor in its place, or one added last. Such a URL is plain and
 * its query holds at most one `cursor`, so the text is edited where nextPageUrl would test and
 * split it (a cursor is base64url; one that were not goes the general way).
 */
export function nextListLink (url: string, pathLength: number, query: ListQuery, next: string): string {
  if (!CURSOR_VALUE.test(next)) return nextPageLink(url, next)
  if (query.cursor === undefined) return `<${url}${url.length === pathLength ? '?' : '&'}cursor=${next}>; rel="next"`
  // The one `cursor=` of the query: a limit's pair holds none, and a cursor's value no `=`.
  const value = url.indexOf('cursor=', pathLength) + 'cursor='.length
  return `<${url.slice(0, value)}${next}${url.slice(value + query.cursor.length)}>; rel="next"`
}

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
