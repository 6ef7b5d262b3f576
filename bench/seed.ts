// Seeds a fresh database for `npm run bench` through the service's own data layer (its
// migrations, its Kysely tables): users with one real password hash, a live session each,
// posts, products on sale with deep stock, and orders. Rows go in batches inside one transaction
// per table, so 100,000 posts take seconds, not minutes.
import { sql } from 'kysely'
import { openDatabase } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createdAtKey } from '../src/http/created-range.js'
import { sortedCursorOf } from '../src/http/sorted-paging.js'
import { postListing } from '../src/posts/post.listing.js'
import { newToken } from '../src/auth/token.js'
import { hashPassword } from '../src/users/password.js'
import { write } from '../src/db/write.js'

export const PASSWORD = 'bench password 1'

export interface SeedSize { users: number, posts: number, products: number, orders: number }

/** The measured runs' data, and the smoke runs' (seconds, for CI). */
export const FULL_SIZE: SeedSize = { users: 1000, posts: 100_000, products: 1000, orders: 10_000 }
export const SMOKE_SIZE: SeedSize = { users: 40, posts: 2000, products: 20, orders: 200 }

export interface Seeded {
  /** user id → bearer token of a live session, and the e-mail to log in with. */
  users: Array<{ id: number, email: string, token: string }>
  postIds: { first: number, last: number }
  /** The oldest posts with their authors: the PATCH runs edit these, one per connection. */
  editable: Array<{ id: number, authorId: number }>
  productIds: { first: number, last: number }
  /** The cursor a client holds after paging past 90% of the posts, newest first. */
  deepCursor: string
}

const BATCH = 1000

async function inBatches<T> (count: number, make: (i: number) => T, insert: (rows: T[]) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < count; start += BATCH) {
    const rows: T[] = []
    for (let i = start; i < Math.min(count, start + BATCH); i++) rows.push(make(i))
    await insert(rows)
  }
}

export async function seed (databaseUrl: string, size: SeedSize): Promise<Seeded> {
  const { db, dialect } = openDatabase(databaseUrl)
  try {
    await migrateToLatest(db, dialect)
    const passwordHash = await hashPassword(PASSWORD)
    const now = Date.now()
    // Oldest first, one second apart, ending now: ids and created_at grow together.
    const at = (i: number, count: number) => new Date(now - (count - i) * 1000).toISOString()
    const expires = new Date(now + 7 * 24 * 3600 * 1000).toISOString()
    const tokens: string[] = []

    await write(db, async (trx) => {
      await inBatches(size.users, (i) => ({ email: `user${i}@bench.example`, name: `User ${i}`, password_hash: passwordHash, role: 'USER' as const, created_at: at(i, size.users), updated_at: at(i, size.users) }),
        async (rows) => await trx.insertInto('users').values(rows).execute())
    })
    const users = (await db.selectFrom('users').select(['id', 'email']).orderBy('id').execute()).map((u) => ({ id: Number(u.id), email: u.email, token: '' }))
    await write(db, async (trx) => {
      await inBatches(users.length, (i) => {
        const { token, hash } = newToken()
        tokens.push(token)
        return { user_id: users[i]!.id, token_hash: hash, created_at: new Date(now).toISOString(), expires_at: expires, authenticated_at: new Date(now).toISOString() }
      }, async (rows) => await trx.insertInto('sessions').values(rows).execute())
    })
    users.forEach((u, i) => { u.token = tokens[i]! })

    await write(db, async (trx) => {
      await inBatches(size.posts, (i) => ({
        author_id: users[i % users.length]!.id,
        title: `Post number ${i}`,
        content: `The content of post number ${i}, long enough to look like a short post on a real site.`,
        created_at: at(i, size.posts),
        updated_at: at(i, size.posts)
      }), async (rows) => await trx.insertInto('posts').values(rows).execute())
      const categories = ['BOOK', 'CLOTHING', 'ELECTRONICS', 'FOOD', 'HOME', 'SPORTS'] as const
      await inBatches(size.products, (i) => ({
        name: `Product ${i}`, price: 100 + i, category: categories[i % categories.length]!, stock: 1_000_000, on_sale: 1,
        created_at: at(i, size.products), updated_at: at(i, size.products)
      }), async (rows) => await trx.insertInto('products').values(rows).execute())
    })
    const products = await db.selectFrom('products').select(['id', 'price']).orderBy('id').execute()
    await write(db, async (trx) => {
      await inBatches(size.orders, (i) => {
        const product = products[i % products.length]!
        return {
          user_id: users[i % users.length]!.id, product_id: product.id, quantity: 1, total_price: product.price,
          status: 'PAID' as const, created_at: at(i, size.orders), updated_at: at(i, size.orders)
        }
      }, async (rows) => await trx.insertInto('orders').values(rows).execute())
    })
    // Fresh statistics, as a database that grew to this size over time would have.
    await write(db, async (trx) => await sql`ANALYZE`.execute(trx))

    const range = async (table: 'posts' | 'products') => {
      const r = await db.selectFrom(table).select((eb) => [eb.fn.min('id').as('first'), eb.fn.max('id').as('last')]).executeTakeFirstOrThrow()
      return { first: Number(r.first), last: Number(r.last) }
    }
    const postIds = await range('posts')
    const editable = (await db.selectFrom('posts').select(['id', 'author_id']).orderBy('id').limit(Math.min(Math.floor(size.posts / 10), 4000)).execute())
      .map((p) => ({ id: Number(p.id), authorId: Number(p.author_id) }))
    const [deep, after] = await db.selectFrom('posts').select(['id', 'created_at']).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(2).offset(Math.floor(size.posts * 0.9) - 1).execute()
    const deepCursor = sortedCursorOf(postListing({}).fingerprint, createdAtKey.keyOf)(deep!, after)
    return { users, postIds, editable, productIds: await range('products'), deepCursor }
  } finally {
    await db.destroy()
  }
}
