// The floor's routes on SQLite (bench/floor.ts): better-sqlite3 on the service's WAL file, each
// statement prepared once with the text the service runs (copied from src/posts, src/products,
// src/orders, src/sessions and src/events, as the service compiles them: every parameter `+?`,
// see src/db/sqlite-connection.ts), so the database does the same work for both.
//
// A read is its one statement and JSON.stringify of the row(s) it returns. A write runs the
// service's statements in one BEGIN IMMEDIATE transaction, with the service's connection
// settings (WAL, synchronous=FULL, foreign keys), the event row the service writes with each
// change included (src/events/event.repository.ts), its data the JSON the floor answers.
//
// Commits: FLOOR_COMMIT=each (the default) commits every write on its own, the transactional
// floor; FLOOR_COMMIT=group batches them the barest way, as the service's group commit does
// (src/db/group-commit.ts): the writes that arrived before the event loop's next turn run one
// after another, each in a savepoint (rolled back when it refuses), in one transaction, at most
// 256, and are answered after its one COMMIT.
import { randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import Sqlite from 'better-sqlite3'
import { answer, answerRow, refuse, type FloorRoutes } from './floor-http.js'

const POST_COLUMNS = '"posts"."id", "posts"."author_id", "posts"."title", "posts"."content", "posts"."views", "posts"."created_at", "posts"."updated_at"'
const WITH_AUTHOR = `select ${POST_COLUMNS}, (select "users"."name" from "users" where "users"."id" = "posts"."author_id") as "author_name" from "posts"`
const NEWEST_FIRST = 'order by "posts"."created_at" desc, "posts"."id" desc limit +?'

// Also the ceiling's reads (bench/ceiling.ts).
export const POST_BY_ID = `${WITH_AUTHOR} where "posts"."id" = +?`
export const PRODUCT_BY_ID = 'select "id", "name", "price", "category", "stock", "on_sale", "created_at", "updated_at" from "products" where "id" = +?'
const FIRST_PAGE = `${WITH_AUTHOR} ${NEWEST_FIRST}`
// After a cursor that does not fall inside a run of equal creation times (the bench's posts are
// a second apart): the service's query of the keys beyond the cursor's (src/db/keyset.ts).
const PAGE_AFTER = `${WITH_AUTHOR} where "posts"."created_at" < +? ${NEWEST_FIRST}`
const COUNT_VIEW = 'update "posts" set "views" = "views" + +? where "id" = +? returning "views"'
const SESSION_USER = 'select "users"."id" as "id", "users"."email" as "email", "users"."name" as "name", "users"."role" as "role", "sessions"."expires_at" as "expiresAt" ' +
  'from "sessions" inner join "users" on "users"."id" = "sessions"."user_id" where "sessions"."token_hash" = +? and "sessions"."expires_at" > +?'
const INSERT_POST = `insert into "posts" ("author_id", "title", "content", "created_at", "updated_at") values (+?, +?, +?, +?, +?) returning ${POST_COLUMNS}`
const POST_FOR_UPDATE = `select ${POST_COLUMNS} from "posts" where "posts"."id" = +?`
const AUTHOR_NAME = 'select "users"."name" from "users" where "users"."id" = +?'
const UPDATE_POST = `update "posts" set "title" = coalesce(+?, "title"), "content" = coalesce(+?, "content"), "updated_at" = +? where "id" = +? returning ${POST_COLUMNS}`
const TAKE_STOCK = 'update "products" set "stock" = "stock" - +?, "updated_at" = +? where "id" = +? and "stock" >= +?'
const INSERT_ORDER = 'insert into "orders" ("user_id", "product_id", "quantity", "total_price", "status", "created_at", "updated_at") values (+?, +?, +?, +?, +?, +?, +?) ' +
  'returning "id", "user_id", "product_id", "quantity", "total_price", "status", "created_at", "updated_at"'
const INSERT_EVENT = 'insert into "events" ("id", "event_id", "type", "occurred_at", "resource_type", "resource_id", "audience", "data", "actor_user_id", "actor_api_key_id") ' +
  'values ((select coalesce(max(id), (select pruned_through from event_log where id = 1)) + 1 from events), +?, +?, +?, +?, +?, +?, +?, +?, +?)'

interface PostRow { id: number, author_id: number, updated_at: string, author_name?: string }
interface ProductRow { id: number, price: number, stock: number, on_sale: number, updated_at: string }

export function sqliteFloor (path: string): FloorRoutes {
  const db = new Sqlite(path)
  // The service's connection settings (src/db/database.ts), page cache size included.
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  db.pragma('cache_size = -4096')
  const post = db.prepare(POST_BY_ID)
  const product = db.prepare(PRODUCT_BY_ID)
  const firstPage = db.prepare(FIRST_PAGE)
  const pageAfter = db.prepare(PAGE_AFTER)
  const countView = db.prepare(COUNT_VIEW)
  const sessionUser = db.prepare(SESSION_USER)
  const insertPost = db.prepare(INSERT_POST)
  const postForUpdate = db.prepare(POST_FOR_UPDATE)
  const authorName = db.prepare(AUTHOR_NAME)
  const updatePost = db.prepare(UPDATE_POST)
  const takeStock = db.prepare(TAKE_STOCK)
  const insertOrder = db.prepare(INSERT_ORDER)
  const insertEvent = db.prepare(INSERT_EVENT)

  const userOf = (token: string, now: string) => (sessionUser.get(token, now) as { id: number } | undefined)?.id
  // The actor is the user of the request's token (no API key in the floor).
  const event = (type: string, now: string, resourceType: string, resourceId: number, audience: number | null, data: string, actor: number) => {
    insertEvent.run(randomUUID(), type, now, resourceType, resourceId, audience, data, actor, null)
  }

  // Each write returns the JSON to answer, or the status of a refusal.
  const create = (author: number, title: string, content: string, now: string): string => {
    const row = insertPost.get(author, title, content, now, now) as PostRow
    const json = JSON.stringify(row)
    event('post.created', now, 'post', row.id, null, json, author)
    return json
  }
  const patch = (user: number, id: number, ifMatch: string | undefined, title: string | null, content: string | null, now: string): string | number => {
    const current = postForUpdate.get(id) as PostRow | undefined
    if (current === undefined) return 404
    const { name } = authorName.get(current.author_id) as { name: string }
    if (current.author_id !== user) return 403
    // The floor's tag is the post's updated_at: the cheapest thing that changes with every write.
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== `"${current.updated_at}"`) return 412
    const row = updatePost.get(title, content, now, id) as PostRow
    row.author_name = name
    const json = JSON.stringify(row)
    event('post.updated', now, 'post', id, null, json, user)
    return json
  }
  const order = (user: number, productId: number, quantity: number, now: string): string | number => {
    const p = product.get(productId) as ProductRow | undefined
    if (p === undefined || p.on_sale !== 1 || p.stock < quantity || takeStock.run(quantity, now, productId, quantity).changes !== 1) return 409
    const row = insertOrder.get(user, productId, quantity, p.price * quantity, 'PAID', now, now) as { id: number }
    const json = JSON.stringify(row)
    event('order.created', now, 'order', row.id, user, json, user)
    p.stock -= quantity
    p.updated_at = now
    event('product.updated', now, 'product', productId, null, JSON.stringify(p), user)
    return json
  }
  const settle = (res: ServerResponse, status: number, outcome: string | number, etag?: string) =>
    typeof outcome === 'number' ? refuse(res, outcome) : answer(res, status, outcome, etag)

  // A write: its statements and the answer to give once they are committed.
  type Write = () => () => void
  const begin = db.prepare('begin immediate')
  const commit = db.prepare('commit')
  const savepoint = db.prepare('savepoint w')
  const release = db.prepare('release w')
  const rollbackTo = db.prepare('rollback to w')
  const queue: Write[] = []
  const flush = (): void => {
    const batch = queue.splice(0, 256)
    begin.run()
    const answers = batch.map((work) => {
      savepoint.run()
      const reply = work()
      release.run()
      return reply
    })
    commit.run()
    for (const reply of answers) reply()
    if (queue.length > 0) setImmediate(flush)
  }
  /** Runs a write's transaction (its own, or its part of the next batch) and answers it. */
  const commitEach = process.env.FLOOR_COMMIT !== 'group'
  const writeAndAnswer = (res: ServerResponse, status: number, work: () => string | number, etag?: string): undefined => {
    if (commitEach) {
      settle(res, status, db.transaction(work).immediate(), etag)
      return
    }
    if (queue.length === 0) setImmediate(flush)
    queue.push(() => {
      const outcome = work()
      // A refusal leaves nothing: its savepoint is rolled back (release follows in flush).
      if (typeof outcome === 'number') rollbackTo.run()
      return () => settle(res, status, outcome, etag)
    })
  }

  return {
    post: (res, id) => answerRow(res, post.get(id)),
    product: (res, id) => answerRow(res, product.get(id)),
    // A page of `limit` reads `limit + 1` rows, as the service does to know whether another follows.
    list: (res, limit, after) => {
      const rows = after === undefined ? firstPage.all(limit + 1) : pageAfter.all(after.key, limit + 1)
      if (rows.length > limit) rows.length = limit
      return answer(res, 200, JSON.stringify(rows))
    },
    view: (res, id) => writeAndAnswer(res, 200, () => {
      const row = countView.get(1, id) as { views: number } | undefined
      return row === undefined ? 404 : JSON.stringify(row)
    }),
    createPost: (res, token, body) => {
      const now = new Date().toISOString()
      const user = userOf(token, now)
      if (user === undefined) return refuse(res, 401)
      const { title, content } = JSON.parse(body) as { title: string, content: string }
      return writeAndAnswer(res, 201, () => create(user, title, content, now))
    },
    patchPost: (res, token, id, ifMatch, body) => {
      const now = new Date().toISOString()
      const user = userOf(token, now)
      if (user === undefined) return refuse(res, 401)
      const { title, content } = JSON.parse(body) as { title?: string, content?: string }
      return writeAndAnswer(res, 200, () => patch(user, id, ifMatch, title ?? null, content ?? null, now), `"${now}"`)
    },
    placeOrder: (res, token, body) => {
      const now = new Date().toISOString()
      const user = userOf(token, now)
      if (user === undefined) return refuse(res, 401)
      const { productId, quantity } = JSON.parse(body) as { productId: number, quantity: number }
      return writeAndAnswer(res, 201, () => order(user, productId, quantity, now))
    }
  }
}
