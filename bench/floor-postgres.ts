// The floor's routes on PostgreSQL (bench/floor.ts): named prepared pg queries (parsed and
// planned once per connection, as the service's hot queries) on a pool of the service's size
// (10, src/db/database.ts), each with the text the service runs (copied from src/posts,
// src/products, src/orders, src/sessions and src/events/recorded-write.ts as the service
// compiles them). pg's own type parsing: ids and counts arrive as text, times as Dates.
//
// A read is its one query, in pg's callback form, and JSON.stringify of the row(s) it returns.
// A write runs the service's statements: a post's insert and its event (with the event's
// event_pending row) as the service's one WITH statement; a PATCH and an order in a transaction
// around the same statements. The event's data is spliced around the row's id by the statement,
// as in the service; the floor's part of it is the request's own JSON.
import { randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import pg from 'pg'
import { answer, answerRow, fail, refuse, type FloorRoutes } from './floor-http.js'

const POST_COLUMNS = '"posts"."id", "posts"."author_id", "posts"."title", "posts"."content", "posts"."views", "posts"."created_at", "posts"."updated_at"'
const WITH_AUTHOR = `select ${POST_COLUMNS}, (select "users"."name" from "users" where "users"."id" = "posts"."author_id") as "author_name" from "posts"`
const NEWEST_FIRST = 'order by "posts"."created_at" desc, "posts"."id" desc'
const PRODUCT_COLUMNS = '"id", "name", "price", "category", "stock", "on_sale", "created_at", "updated_at"'
const ORDER_COLUMNS = '"id", "user_id", "product_id", "quantity", "total_price", "status", "created_at", "updated_at"'

/** The events of a write, after its `written` row (src/events/recorded-write.ts): `n` its parameter count, `others` more events. */
function recorded (n: number, others = 0): string {
  const p = (cast: string): string => `$${++n}::${cast}`
  const selects = [`select ${p('text')}, ${p('text')}, ${p('timestamptz')}, ${p('text')}, written.id, ${p('bigint')}, '{"id":' || written.id::text || ${p('text')}, ${p('bigint')}, ${p('bigint')} from written`]
  for (let i = 0; i < others; i++) selects.push(`select ${p('text')}, ${p('text')}, ${p('timestamptz')}, ${p('text')}, ${p('bigint')}, ${p('bigint')}, ${p('text')}, ${p('bigint')}, ${p('bigint')}`)
  return `recorded as (insert into events (event_id, type, occurred_at, resource_type, resource_id, audience, data, actor_user_id, actor_api_key_id) ${selects.join(' union all ')} returning id, audience), ` +
    'pending as (insert into event_pending (event_pk, audience) select id, audience from recorded)'
}

const Q = {
  post: `${WITH_AUTHOR} where "posts"."id" = $1`,
  product: `select ${PRODUCT_COLUMNS} from "products" where "id" = $1`,
  firstPage: `${WITH_AUTHOR} ${NEWEST_FIRST} limit $1`,
  pageAfter: `${WITH_AUTHOR} where ("posts"."created_at", "posts"."id") < ($1, $2) ${NEWEST_FIRST} limit $3`,
  countView: 'update "posts" set "views" = "views" + $1 where "id" = $2 returning "views"',
  sessionUser: 'select "users"."id" as "id", "users"."email" as "email", "users"."name" as "name", "users"."role" as "role", "sessions"."expires_at" as "expiresAt" ' +
    'from "sessions" inner join "users" on "users"."id" = "sessions"."user_id" where "sessions"."token_hash" = $1 and "sessions"."expires_at" > $2',
  createPost: `with written as (insert into "posts" ("author_id", "title", "content", "created_at", "updated_at") values ($1, $2, $3, $4, $5) returning ${POST_COLUMNS}), ` +
    `${recorded(5)} select "id", "author_id", "title", "content", "views", "created_at", "updated_at" from written`,
  postForUpdate: `select ${POST_COLUMNS} from "posts" where "posts"."id" = $1 for update`,
  authorName: 'select "users"."name" from "users" where "users"."id" = $1',
  updatePost: `with written as (update "posts" set "title" = coalesce($1, "title"), "content" = coalesce($2, "content"), "updated_at" = $3 where "id" = $4 returning ${POST_COLUMNS}), ` +
    `${recorded(4)} select "id", "author_id", "title", "content", "views", "created_at", "updated_at" from written`,
  productForUpdate: `select ${PRODUCT_COLUMNS} from "products" where "id" = $1 for update`,
  takeStock: 'update "products" set "stock" = "stock" - $1, "updated_at" = $2 where "id" = $3 and "stock" >= $4',
  placeOrder: `with written as (insert into "orders" ("user_id", "product_id", "quantity", "total_price", "status", "created_at", "updated_at") values ($1, $2, $3, $4, $5, $6, $7) returning ${ORDER_COLUMNS}), ` +
    `${recorded(7, 1)} select ${ORDER_COLUMNS} from written`
}
type Name = keyof typeof Q

/** The query, named after its key: prepared once per connection. */
const named = (name: Name, values: unknown[]): pg.QueryConfig => ({ name, text: Q[name], values })

/** The part of an event's data after `{"id":N`: the request's JSON object, its members after the id. */
const after = (body: string): string => ',' + body.slice(1)

interface PostRow { author_id: string, updated_at: Date, author_name?: string }
interface ProductRow { price: string, stock: string, on_sale: number, updated_at: Date | string }

class Refused extends Error {
  readonly status: number
  constructor (status: number) { super(String(status)); this.status = status }
}

export function postgresFloor (url: string): FloorRoutes {
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  pool.on('error', () => {})

  const read = (res: ServerResponse, name: Name, values: unknown[], answerRows: (rows: unknown[]) => void) => {
    pool.query(named(name, values), (error: Error | undefined, result: pg.QueryResult) => {
      if (error !== undefined && error !== null) fail(res, error)
      else answerRows(result.rows)
    })
    return undefined
  }
  const userOf = async (token: string, now: string): Promise<string> => {
    const user = (await pool.query<{ id: string }>(named('sessionUser', [token, now]))).rows[0]
    if (user === undefined) throw new Refused(401)
    return user.id
  }
  const inTransaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect()
    try {
      await client.query('begin')
      const result = await work(client)
      await client.query('commit')
      return result
    } catch (error) {
      await client.query('rollback')
      throw error
    } finally {
      client.release()
    }
  }
  // A refusal answers its status; anything else is the floor's own fault (bench/floor.ts answers 500).
  const answering = async (res: ServerResponse, work: () => Promise<void>): Promise<void> => {
    try {
      await work()
    } catch (error) {
      if (!(error instanceof Refused)) throw error
      refuse(res, error.status)
    }
  }

  return {
    post: (res, id) => read(res, 'post', [id], (rows) => answerRow(res, rows[0])),
    product: (res, id) => read(res, 'product', [id], (rows) => answerRow(res, rows[0])),
    // A page of `limit` reads `limit + 1` rows, as the service does to know whether another follows.
    list: (res, limit, position) => read(res, position === undefined ? 'firstPage' : 'pageAfter',
      position === undefined ? [limit + 1] : [position.key, position.id, limit + 1], (rows) => {
        if (rows.length > limit) rows.length = limit
        answer(res, 200, JSON.stringify(rows))
      }),
    view: (res, id) => read(res, 'countView', [1, id], (rows) => answerRow(res, rows[0])),
    createPost: async (res, token, body) => await answering(res, async () => {
      const now = new Date().toISOString()
      const user = await userOf(token, now)
      const { title, content } = JSON.parse(body) as { title: string, content: string }
      const { rows: [row] } = await pool.query(named('createPost', [user, title, content, now, now, randomUUID(), 'post.created', now, 'post', null, after(body), user, null]))
      answer(res, 201, JSON.stringify(row))
    }),
    patchPost: async (res, token, id, ifMatch, body) => await answering(res, async () => {
      const now = new Date().toISOString()
      const user = await userOf(token, now)
      const { title, content } = JSON.parse(body) as { title?: string, content?: string }
      const json = await inTransaction(async (client) => {
        const current = (await client.query<PostRow>(named('postForUpdate', [id]))).rows[0]
        if (current === undefined) throw new Refused(404)
        const { name } = (await client.query<{ name: string }>(named('authorName', [current.author_id]))).rows[0]!
        if (current.author_id !== user) throw new Refused(403)
        // The floor's tag is the post's updated_at: the cheapest thing that changes with every write.
        if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== `"${current.updated_at.toISOString()}"`) throw new Refused(412)
        const row = (await client.query<PostRow>(named('updatePost', [title ?? null, content ?? null, now, id, randomUUID(), 'post.updated', now, 'post', null, after(body), user, null]))).rows[0]!
        row.author_name = name
        return JSON.stringify(row)
      })
      answer(res, 200, json, `"${now}"`)
    }),
    placeOrder: async (res, token, body) => await answering(res, async () => {
      const now = new Date().toISOString()
      const user = await userOf(token, now)
      const { productId, quantity } = JSON.parse(body) as { productId: number, quantity: number }
      const json = await inTransaction(async (client) => {
        const p = (await client.query<ProductRow>(named('productForUpdate', [productId]))).rows[0]
        if (p === undefined || p.on_sale !== 1 || Number(p.stock) < quantity) throw new Refused(409)
        if ((await client.query(named('takeStock', [quantity, now, productId, quantity]))).rowCount !== 1) throw new Refused(409)
        p.stock = String(Number(p.stock) - quantity)
        p.updated_at = now
        const { rows: [row] } = await client.query(named('placeOrder', [user, productId, quantity, Number(p.price) * quantity, 'PAID', now, now,
          randomUUID(), 'order.created', now, 'order', user, after(body), user, null,
          randomUUID(), 'product.updated', now, 'product', productId, null, JSON.stringify(p), user, null]))
        return JSON.stringify(row)
      })
      answer(res, 201, json)
    })
  }
}
