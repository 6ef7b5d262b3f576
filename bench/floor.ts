// The floor for `npm run bench`: what the same routes cost with nothing but node:http, one
// prepared statement per route (better-sqlite3, or named pg queries) and JSON.stringify. No
// framework, no validation beyond what is needed to answer, no logging, no metrics. It answers the
// same URLs with the same representations, so the service's figures can be read as a fraction
// of it. Writes run the same statements as the service, in a transaction where the service uses
// one, with the same durability (SQLite WAL + synchronous=FULL; PostgreSQL's defaults). Single-
// resource reads send an ETag (SHA-1 of the body) because the PATCH runs need one for If-Match.
// On SQLite every parameter is written `+?`, as the service's query compiler writes it, so that
// SQLite does not plan the statement again on every run (src/db/sqlite-connection.ts).
//
//   FLOOR_DATABASE_URL=file:… | postgres://…   FLOOR_PORT=…   node --import tsx bench/floor.ts
import { createHash, hash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import Sqlite from 'better-sqlite3'
import pg from 'pg'

interface PostRow { id: number, title: string, content: string, author_id: number, author_name: string, views: number, created_at: string | Date, updated_at: string | Date }
interface ProductRow { id: number, name: string, price: number, category: string, stock: number, on_sale: number, created_at: string | Date, updated_at: string | Date }
interface OrderRow { id: number, user_id: number, product_id: number, quantity: number, total_price: number, status: string, created_at: string | Date, updated_at: string | Date }
interface SessionUser { id: number, name: string }

class HttpError extends Error { constructor (readonly status: number, readonly code: string) { super(code) } }

/** The queries every route needs, for one database. */
interface Store {
  post: (id: number) => Promise<PostRow | undefined>
  page: (before: number | undefined, take: number) => Promise<PostRow[]>
  product: (id: number) => Promise<ProductRow | undefined>
  countView: (id: number) => Promise<number | undefined>
  sessionUser: (tokenHash: string, now: string) => Promise<SessionUser | undefined>
  insertPost: (authorId: number, title: string, content: string, now: string) => Promise<PostRow>
  /** In one transaction: lock, check (author, If-Match via `check`), update. */
  patchPost: (id: number, check: (row: PostRow) => void, title: string | undefined, content: string | undefined, now: string) => Promise<PostRow>
  /** In one transaction: product, conditional stock update, order. */
  placeOrder: (userId: number, productId: number, quantity: number, now: string) => Promise<OrderRow>
}

const POST_COLUMNS = 'p.id, p.title, p.content, p.author_id, (SELECT u.name FROM users u WHERE u.id = p.author_id) AS author_name, p.views, p.created_at, p.updated_at'

function sqliteStore (path: string): Store {
  const db = new Sqlite(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  const prepare = (text: string): Sqlite.Statement => db.prepare(text.replaceAll('?', '+?'))
  const post = prepare(`SELECT ${POST_COLUMNS} FROM posts p WHERE p.id = ?`)
  const first = prepare(`SELECT ${POST_COLUMNS} FROM posts p ORDER BY p.id DESC LIMIT ?`)
  const after = prepare(`SELECT ${POST_COLUMNS} FROM posts p WHERE p.id < ? ORDER BY p.id DESC LIMIT ?`)
  const product = prepare('SELECT * FROM products WHERE id = ?')
  const view = prepare('UPDATE posts SET views = views + 1 WHERE id = ? RETURNING views')
  const session = prepare('SELECT u.id, u.name FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ? AND s.expires_at > ?')
  const insert = prepare('INSERT INTO posts (author_id, title, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *')
  const lockPost = prepare('SELECT * FROM posts WHERE id = ?')
  const authorName = prepare('SELECT name FROM users WHERE id = ?')
  const update = prepare('UPDATE posts SET title = coalesce(?, title), content = coalesce(?, content), updated_at = ? WHERE id = ? RETURNING *')
  const lockProduct = prepare('SELECT * FROM products WHERE id = ?')
  const take = prepare('UPDATE products SET stock = stock - ?, updated_at = ? WHERE id = ? AND stock >= ?')
  const order = prepare('INSERT INTO orders (user_id, product_id, quantity, total_price, status, created_at, updated_at) VALUES (?, ?, ?, ?, \'PAID\', ?, ?) RETURNING *')
  // BEGIN IMMEDIATE, as the service's transactions.
  const patch = db.transaction((id: number, check: (row: PostRow) => void, title: string | undefined, content: string | undefined, now: string) => {
    const row = lockPost.get(id) as PostRow | undefined
    if (row === undefined) throw new HttpError(404, 'POST_NOT_FOUND')
    row.author_name = (authorName.get(row.author_id) as { name: string }).name
    check(row)
    const updated = update.get(title ?? null, content ?? null, now, id) as PostRow
    return { ...updated, author_name: row.author_name }
  })
  const place = db.transaction((userId: number, productId: number, quantity: number, now: string) => {
    const p = lockProduct.get(productId) as ProductRow | undefined
    if (p === undefined) throw new HttpError(404, 'PRODUCT_NOT_FOUND')
    if (p.on_sale !== 1) throw new HttpError(409, 'PRODUCT_NOT_ON_SALE')
    if (p.stock < quantity || take.run(quantity, now, productId, quantity).changes !== 1) throw new HttpError(409, 'NOT_ENOUGH_STOCK')
    return order.get(userId, productId, quantity, p.price * quantity, now, now) as OrderRow
  })
  return {
    post: async (id) => post.get(id) as PostRow | undefined,
    page: async (before, n) => (before === undefined ? first.all(n) : after.all(before, n)) as PostRow[],
    product: async (id) => product.get(id) as ProductRow | undefined,
    countView: async (id) => (view.get(id) as { views: number } | undefined)?.views,
    sessionUser: async (tokenHash, now) => session.get(tokenHash, now) as SessionUser | undefined,
    insertPost: async (authorId, title, content, now) => insert.get(authorId, title, content, now, now) as PostRow,
    patchPost: async (id, check, title, content, now) => patch.immediate(id, check, title, content, now),
    placeOrder: async (userId, productId, quantity, now) => place.immediate(userId, productId, quantity, now)
  }
}

function pgStore (url: string): Store {
  // int8 as a JS number: every id and count here is far below 2^53.
  const pool = new pg.Pool({ connectionString: url, max: 10, types: { getTypeParser: ((oid: number, format?: 'text' | 'binary') => oid === 20 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser } })
  pool.on('error', () => {})
  const one = async <T>(name: string, text: string, values: unknown[], client: pg.Pool | pg.PoolClient = pool): Promise<T | undefined> =>
    (await client.query({ name, text, values })).rows[0] as T | undefined
  const inTransaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      await client.query('ROLLBACK')
      throw error
    } finally {
      client.release()
    }
  }
  return {
    post: async (id) => await one('post', `SELECT ${POST_COLUMNS} FROM posts p WHERE p.id = $1`, [id]),
    page: async (before, n) => (before === undefined
      ? await pool.query({ name: 'first', text: `SELECT ${POST_COLUMNS} FROM posts p ORDER BY p.id DESC LIMIT $1`, values: [n] })
      : await pool.query({ name: 'after', text: `SELECT ${POST_COLUMNS} FROM posts p WHERE p.id < $1 ORDER BY p.id DESC LIMIT $2`, values: [before, n] })).rows as PostRow[],
    product: async (id) => await one('product', 'SELECT * FROM products WHERE id = $1', [id]),
    countView: async (id) => (await one<{ views: number }>('view', 'UPDATE posts SET views = views + 1 WHERE id = $1 RETURNING views', [id]))?.views,
    sessionUser: async (tokenHash, now) => await one('session', 'SELECT u.id, u.name FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2', [tokenHash, now]),
    insertPost: async (authorId, title, content, now) => (await one<PostRow>('insert', 'INSERT INTO posts (author_id, title, content, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING *', [authorId, title, content, now]))!,
    patchPost: async (id, check, title, content, now) => await inTransaction(async (client) => {
      const row = await one<PostRow>('lock-post', 'SELECT * FROM posts WHERE id = $1 FOR UPDATE', [id], client)
      if (row === undefined) throw new HttpError(404, 'POST_NOT_FOUND')
      row.author_name = (await one<{ name: string }>('author-name', 'SELECT name FROM users WHERE id = $1', [row.author_id], client))!.name
      check(row)
      const updated = await one<PostRow>('update-post', 'UPDATE posts SET title = coalesce($1, title), content = coalesce($2, content), updated_at = $3 WHERE id = $4 RETURNING *', [title ?? null, content ?? null, now, id], client)
      return { ...updated!, author_name: row.author_name }
    }),
    placeOrder: async (userId, productId, quantity, now) => await inTransaction(async (client) => {
      const p = await one<ProductRow>('lock-product', 'SELECT * FROM products WHERE id = $1 FOR UPDATE', [productId], client)
      if (p === undefined) throw new HttpError(404, 'PRODUCT_NOT_FOUND')
      if (p.on_sale !== 1) throw new HttpError(409, 'PRODUCT_NOT_ON_SALE')
      const taken = await client.query({ name: 'take', text: 'UPDATE products SET stock = stock - $1, updated_at = $2 WHERE id = $3 AND stock >= $1', values: [quantity, now, productId] })
      if (p.stock < quantity || taken.rowCount !== 1) throw new HttpError(409, 'NOT_ENOUGH_STOCK')
      return (await one<OrderRow>('order', 'INSERT INTO orders (user_id, product_id, quantity, total_price, status, created_at, updated_at) VALUES ($1, $2, $3, $4, \'PAID\', $5, $5) RETURNING *', [userId, productId, quantity, p.price * quantity, now], client))!
    })
  }
}

const iso = (v: string | Date) => v instanceof Date ? v.toISOString() : v
const toPost = (r: PostRow) => ({ id: r.id, title: r.title, content: r.content, author: { id: r.author_id, name: r.author_name }, views: r.views, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) })
const toProduct = (r: ProductRow) => ({ id: r.id, name: r.name, price: r.price, category: r.category, stock: r.stock, onSale: r.on_sale === 1, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) })
const toOrder = (r: OrderRow) => ({ id: r.id, userId: r.user_id, productId: r.product_id, quantity: r.quantity, totalPrice: r.total_price, status: r.status, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) })
const tagOf = (json: string) => `"${hash('sha1', json, 'base64url')}"`

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
    const before = cursor === null ? undefined : Number(Buffer.from(cursor, 'base64url').toString('utf8').slice(3))
    const rows = await store.page(before, limit + 1)
    const headers: Record<string, string> = {}
    if (rows.length > limit) {
      rows.length = limit
      headers.link = `</v1/posts?limit=${limit}&cursor=${Buffer.from(`v1:${rows[limit - 1]!.id}`).toString('base64url')}>; rel="next"`
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

const databaseUrl = process.env.FLOOR_DATABASE_URL ?? ''
const store = databaseUrl.startsWith('file:') ? sqliteStore(databaseUrl.slice('file:'.length)) : pgStore(databaseUrl)
const server = createServer((req, res) => {
  handle(store, req, res).catch((error: unknown) => {
    const status = error instanceof HttpError ? error.status : 500
    send(res, status, { code: error instanceof HttpError ? error.code : 'INTERNAL_SERVER_ERROR' })
  })
})
server.keepAliveTimeout = 72_000
server.listen(Number(process.env.FLOOR_PORT ?? 0), '127.0.0.1')
process.on('SIGTERM', () => { server.close(); server.closeAllConnections(); process.exit(0) })
