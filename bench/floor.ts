// The floor for `npm run bench`: what the service's routes cost with nothing of the service.
// node:http; per read, ONE prepared statement with the SQL the service runs, JSON.stringify of
// the row(s) it returns, and res.end with content-type and content-length: no mapping to the
// service's representations, no ETag, no validation, no logging. Per write, the service's
// statements in one transaction, the event the service records with each change included
// (bench/floor-sqlite.ts, bench/floor-postgres.ts); an answer carries an ETag only where the
// bench's PATCH runs need one for If-Match. The service's figures read as a fraction of these.
//
//   FLOOR_DATABASE_URL=file:… | postgres://…   FLOOR_PORT=…   node --import tsx bench/floor.ts
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { answer, fail, positionOf, readBody, refuse, tokenHash, type Handled } from './floor-http.js'
import { postgresFloor } from './floor-postgres.js'
import { sqliteFloor } from './floor-sqlite.js'

const databaseUrl = process.env.FLOOR_DATABASE_URL ?? ''
const routes = databaseUrl.startsWith('file:') ? sqliteFloor(databaseUrl.slice('file:'.length)) : postgresFloor(databaseUrl)

const POSTS = '/v1/posts/'
const PRODUCTS = '/v1/products/'
const VIEWS = '/views'

// Only the URLs the bench sends; ids are read with Number (a path that is not one finds no row).
function route (req: IncomingMessage, res: ServerResponse): Handled {
  const url = req.url ?? '/'
  if (req.method === 'GET') {
    if (url.startsWith(POSTS)) return routes.post(res, Number(url.slice(POSTS.length)))
    if (url.startsWith(PRODUCTS)) return routes.product(res, Number(url.slice(PRODUCTS.length)))
    if (url.startsWith('/v1/posts?')) {
      const query = new URLSearchParams(url.slice('/v1/posts?'.length))
      const cursor = query.get('cursor')
      return routes.list(res, Number(query.get('limit') ?? 20), cursor === null ? undefined : positionOf(cursor))
    }
    if (url === '/health/ready') return answer(res, 200, '{"status":"ok"}')
  } else if (req.method === 'POST') {
    if (url === '/v1/posts') return readBody(req).then((body) => routes.createPost(res, tokenHash(req), body))
    if (url === '/v1/orders') return readBody(req).then((body) => routes.placeOrder(res, tokenHash(req), body))
    if (url.startsWith(POSTS) && url.endsWith(VIEWS)) return routes.view(res, Number(url.slice(POSTS.length, -VIEWS.length)))
  } else if (req.method === 'PATCH' && url.startsWith(POSTS)) {
    const ifMatch = req.headers['if-match']
    return readBody(req).then((body) => routes.patchPost(res, tokenHash(req), Number(url.slice(POSTS.length)), ifMatch, body))
  }
  return refuse(res, 404)
}

const server = createServer((req, res) => {
  try {
    route(req, res)?.catch((error: unknown) => { fail(res, error) })
  } catch (error) {
    fail(res, error)
  }
})
server.keepAliveTimeout = 72_000
server.listen(Number(process.env.FLOOR_PORT ?? 0), '127.0.0.1')
process.on('SIGTERM', () => { server.close(); server.closeAllConnections(); process.exit(0) })
