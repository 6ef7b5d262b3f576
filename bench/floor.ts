// The floor for `npm run bench`: what the same routes cost with nothing but node:http, one
// prepared statement per route (better-sqlite3, or named pg queries) and JSON.stringify. No
// framework, no validation beyond what is needed to answer, no logging, no metrics. It answers the
// same URLs with the same representations, so the service's figures can be read as a fraction
// of it. Writes run the same statements as the service, in a transaction where the service uses
// one, with the same durability (SQLite WAL + synchronous=FULL; PostgreSQL's defaults). Single-
// resource reads send an ETag (SHA-1 of the body) because the PATCH runs need one for If-Match.
// Its statements and representations are in bench/floor-store.ts.
//
//   FLOOR_DATABASE_URL=file:… | postgres://…   FLOOR_PORT=…   node --import tsx bench/floor.ts
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { HttpError, openStore, tagOf, toOrder, toPost, toProduct, type SessionUser, type Store } from './floor-store.js'

function send (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json), ...headers })
  res.end(json)
}

function sendTagged (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json), etag: tagOf(json), ...headers })
  res.end(json)
}

async function readJson (req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = ''
  for await (const chunk of req) text += String(chunk)
  return JSON.parse(text) as Record<string, unknown>
}

async function authenticate (store: Store, req: IncomingMessage, now: string): Promise<SessionUser> {
  const header = req.headers.authorization ?? ''
  const user = header.startsWith('Bearer ') ? await store.sessionUser(createHash('sha256').update(header.slice(7)).digest('hex'), now) : undefined
  if (user === undefined) throw new HttpError(401, 'AUTHENTICATION_REQUIRED')
  return user
}

// The digest the service's cursors carry for the list of every post, newest first.
const NEWEST_FIRST = createHash('sha256').update(JSON.stringify([['sort', '-createdAt']])).digest('base64url').slice(0, 16)

const ID = /^\/v1\/(posts|products)\/([1-9][0-9]{0,15})(\/views)?$/

async function handle (store: Store, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  const now = new Date().toISOString()
  if (req.method === 'GET' && path === '/v1/posts') {
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1))
    const limit = Number(query.get('limit') ?? 20)
    const cursor = query.get('cursor')
    // The service's cursor: `v2:` and [digest of the list, creation time, id] as JSON.
    const parts = cursor === null ? undefined : JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8').slice(3)) as [string, string, string]
    const rows = await store.page(parts === undefined ? undefined : { key: parts[1], id: Number(parts[2]) }, limit + 1)
    const headers: Record<string, string> = {}
    if (rows.length > limit) {
      rows.length = limit
      const last = rows[limit - 1]!
      const next = JSON.stringify([NEWEST_FIRST, new Date(last.created_at).toISOString(), String(last.id)])
      headers.link = `</v1/posts?limit=${limit}&cursor=${Buffer.from(`v2:${next}`).toString('base64url')}>; rel="next"`
    }
    return send(res, 200, rows.map(toPost), headers)
  }
  if (req.method === 'POST' && path === '/v1/posts') {
    const user = await authenticate(store, req, now)
    const body = await readJson(req)
    const post = toPost({ ...await store.insertPost(user.id, String(body.title), String(body.content), now), author_name: user.name })
    return sendTagged(res, 201, post, { location: `/v1/posts/${post.id}` })
  }
  if (req.method === 'POST' && path === '/v1/orders') {
    const user = await authenticate(store, req, now)
    const body = await readJson(req)
    const order = toOrder(await store.placeOrder(user.id, Number(body.productId), Number(body.quantity), now))
    return sendTagged(res, 201, order, { location: `/v1/orders/${order.id}` })
  }
  if (path === '/health/ready') return send(res, 200, { status: 'ok' })
  const match = ID.exec(path)
  if (match === null) throw new HttpError(404, 'NOT_FOUND')
  const id = Number(match[2])
  if (match[1] === 'products' && req.method === 'GET' && match[3] === undefined) {
    const row = await store.product(id)
    if (row === undefined) throw new HttpError(404, 'PRODUCT_NOT_FOUND')
    return sendTagged(res, 200, toProduct(row))
  }
  if (match[1] !== 'posts') throw new HttpError(404, 'NOT_FOUND')
  if (match[3] !== undefined && req.method === 'POST') {
    const views = await store.countView(id)
    if (views === undefined) throw new HttpError(404, 'POST_NOT_FOUND')
    return send(res, 200, { views })
  }
  if (req.method === 'GET') {
    const row = await store.post(id)
    if (row === undefined) throw new HttpError(404, 'POST_NOT_FOUND')
    return sendTagged(res, 200, toPost(row))
  }
  if (req.method === 'PATCH') {
    const user = await authenticate(store, req, now)
    const body = await readJson(req)
    const ifMatch = req.headers['if-match']
    const row = await store.patchPost(id, (current) => {
      if (current.author_id !== user.id) throw new HttpError(403, 'FORBIDDEN_POST_ACCESS')
      if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== tagOf(JSON.stringify(toPost(current)))) throw new HttpError(412, 'PRECONDITION_FAILED')
    }, body.title as string | undefined, body.content as string | undefined, now)
    return sendTagged(res, 200, toPost(row))
  }
  throw new HttpError(405, 'METHOD_NOT_ALLOWED')
}

const store = openStore(process.env.FLOOR_DATABASE_URL ?? '')
const server = createServer((req, res) => {
  handle(store, req, res).catch((error: unknown) => {
    const status = error instanceof HttpError ? error.status : 500
    send(res, status, { code: error instanceof HttpError ? error.code : 'INTERNAL_SERVER_ERROR' })
  })
})
server.keepAliveTimeout = 72_000
server.listen(Number(process.env.FLOOR_PORT ?? 0), '127.0.0.1')
process.on('SIGTERM', () => { server.close(); server.closeAllConnections(); process.exit(0) })
