// The floor's data access (bench/floor.ts): one prepared statement per query, on better-sqlite3
// or as named pg queries, and the representations it answers with. Shared with the ceiling
// (bench/ceiling.ts), so that both run exactly the same statements and build the same JSON.
// On SQLite every parameter is written `+?`, as the service's query compiler writes it, so that
// SQLite does not plan the statement again on every run (src/db/sqlite-connection.ts).
import { hash } from 'node:crypto'
import Sqlite from 'better-sqlite3'
import pg from 'pg'

export interface PostRow { id: number, title: string, content: string, author_id: number, author_name: string, views: number, created_at: string | Date, updated_at: string | Date }
export interface ProductRow { id: number, name: string, price: number, category: string, stock: number, on_sale: number, created_at: string | Date, updated_at: string | Date }
export interface OrderRow { id: number, user_id: number, product_id: number, quantity: number, total_price: number, status: string, created_at: string | Date, updated_at: string | Date }
export interface SessionUser { id: number, name: string }
export interface PagePosition { key: string, id: number }

export class HttpError extends Error { constructor (readonly status: number, readonly code: string) { super(code) } }

/** The queries every route needs, for one database. */
export interface Store {
  post: (id: number) => Promise<PostRow | undefined>
  /** Newest first (creation time, then id), after the cursor's position when given. */
  page: (after: PagePosition | undefined, take: number) => Promise<PostRow[]>
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
  const first = prepare(`SELECT ${POST_COLUMNS} FROM posts p ORDER BY p.created_at DESC, p.id DESC LIMIT ?`)
  const after = prepare(`SELECT ${POST_COLUMNS} FROM posts p WHERE (p.created_at, p.id) < (?, ?) ORDER BY p.created_at DESC, p.id DESC LIMIT ?`)
  const product = prepare('SELECT id, name, price, category, stock, on_sale, created_at, updated_at FROM products WHERE id = ?')
  const view = prepare('UPDATE posts SET views = views + 1 WHERE id = ? RETURNING views')
  const session = prepare('SELECT u.id, u.name FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ? AND s.expires_at > ?')
  const insert = prepare('INSERT INTO posts (author_id, title, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *')
  const lockPost = prepare('SELECT * FROM posts WHERE id = ?')
  const authorName = prepare('SELECT name FROM users WHERE id = ?')
  const update = prepare('UPDATE posts SET title = coalesce(?, title), content = coalesce(?, content), updated_at = ? WHERE id = ? RETURNING *')
  const lockProduct = prepare('SELECT id, name, price, category, stock, on_sale, created_at, updated_at FROM products WHERE id = ?')
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
    page: async (position, n) => (position === undefined ? first.all(n) : after.all(position.key, position.id, n)) as PostRow[],
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
    page: async (position, n) => (position === undefined
      ? await pool.query({ name: 'first', text: `SELECT ${POST_COLUMNS} FROM posts p ORDER BY p.created_at DESC, p.id DESC LIMIT $1`, values: [n] })
      : await pool.query({ name: 'after', text: `SELECT ${POST_COLUMNS} FROM posts p WHERE (p.created_at, p.id) < ($1, $2) ORDER BY p.created_at DESC, p.id DESC LIMIT $3`, values: [position.key, position.id, n] })).rows as PostRow[],
    product: async (id) => await one('product', 'SELECT id, name, price, category, stock, on_sale, created_at, updated_at FROM products WHERE id = $1', [id]),
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
      const p = await one<ProductRow>('lock-product', 'SELECT id, name, price, category, stock, on_sale, created_at, updated_at FROM products WHERE id = $1 FOR UPDATE', [productId], client)
      if (p === undefined) throw new HttpError(404, 'PRODUCT_NOT_FOUND')
      if (p.on_sale !== 1) throw new HttpError(409, 'PRODUCT_NOT_ON_SALE')
      const taken = await client.query({ name: 'take', text: 'UPDATE products SET stock = stock - $1, updated_at = $2 WHERE id = $3 AND stock >= $1', values: [quantity, now, productId] })
      if (p.stock < quantity || taken.rowCount !== 1) throw new HttpError(409, 'NOT_ENOUGH_STOCK')
      return (await one<OrderRow>('order', 'INSERT INTO orders (user_id, product_id, quantity, total_price, status, created_at, updated_at) VALUES ($1, $2, $3, $4, \'PAID\', $5, $5) RETURNING *', [userId, productId, quantity, p.price * quantity, now], client))!
    })
  }
}

/** The store for a database URL: `file:PATH` (SQLite) or `postgres://…`. */
export function openStore (databaseUrl: string): Store {
  return databaseUrl.startsWith('file:') ? sqliteStore(databaseUrl.slice('file:'.length)) : pgStore(databaseUrl)
}

const iso = (v: string | Date) => v instanceof Date ? v.toISOString() : v
export const toPost = (r: PostRow) => ({ id: r.id, title: r.title, content: r.content, author: { id: r.author_id, name: r.author_name }, views: r.views, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) })
export const toProduct = (r: ProductRow) => ({ id: r.id, name: r.name, price: r.price, category: r.category, stock: r.stock, onSale: r.on_sale === 1, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) })
export const toOrder = (r: OrderRow) => ({ id: r.id, userId: r.user_id, productId: r.product_id, quantity: r.quantity, totalPrice: r.total_price, status: r.status, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) })
export const tagOf = (json: string) => `"${hash('sha1', json, 'base64url')}"`
