// Keyset paging of GET /v1/posts must cost the same at any depth (docs/api.md). This
// seeds at least 100,000 posts on a fresh database and times, through app.inject, the first page
// of the default list (newest first) against a deep page (the page after the 99,000th newest
// post, reached by its cursor), with and
// without the authorId filter. It prints medians and the deep/first ratio (1.00 = same cost), the
// database's query plan for the deep page, and, for contrast only, what OFFSET would cost.
//
//   npx tsx bench/posts-paging.bench.ts                     (SQLite, a fresh temporary file)
//   BENCH_DATABASE_URL=postgres://… npx tsx bench/posts-paging.bench.ts   (also PostgreSQL, a fresh database)
//   BENCH_POSTS=200000 BENCH_ROUNDS=500 …                   (optional: table size, timed rounds)
import { performance } from 'node:perf_hooks'
import { CompiledQuery, sql } from 'kysely'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { openDatabase, type DatabaseHandle } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { sortedCursorOf } from '../src/http/sorted-paging.js'
import { createdAtKey } from '../src/http/created-range.js'
import { postListing } from '../src/posts/post.listing.js'
import { scratchDatabase, type ScratchDatabase } from '../test/scratch-database.js'
import { listPostsQueries } from '../src/posts/post.repository.js'
import { write } from '../src/db/write.js'

const POSTS = Math.max(100_000, Number(process.env.BENCH_POSTS ?? 100_000))
const ROUNDS = Math.max(50, Number(process.env.BENCH_ROUNDS ?? 1000))
const AUTHORS = 10
const BATCH = 1000
const PAGE = 20
const DEEP = 99_000

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

function quantile (values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!
}

async function time (fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

interface Target extends ScratchDatabase { name: string }
interface Row { id: bigint, created_at: Date | string }

async function target (name: string, postgresAdminUrl?: string): Promise<Target> {
  return { name, ...await scratchDatabase('bench-posts', postgresAdminUrl) }
}

/** Users and posts straight through Kysely, in one transaction, a thousand rows per INSERT. */
async function seed (database: DatabaseHandle): Promise<bigint[]> {
  const { db } = database
  const now = new Date()
  const authorIds: bigint[] = []
  await write(db, async (trx) => {
    for (let a = 0; a < AUTHORS; a++) {
      const iso = now.toISOString()
      const user = await trx.insertInto('users')
        .values({ email: `author${a}@bench.example`, name: `Author ${a}`, password_hash: 'not a real hash', role: 'USER', created_at: iso, updated_at: iso })
        .returning('id').executeTakeFirstOrThrow()
      authorIds.push(user.id)
    }
    for (let start = 0; start < POSTS; start += BATCH) {
      const rows = []
      for (let i = start; i < Math.min(POSTS, start + BATCH); i++) {
        const iso = new Date(now.getTime() - (POSTS - i) * 1000).toISOString()
        rows.push({ author_id: authorIds[i % AUTHORS]!, title: `Post number ${i}`, content: `The content of post number ${i}.`, created_at: iso, updated_at: iso })
      }
      await trx.insertInto('posts').values(rows).execute()
    }
  })
  // Fresh statistics, as a database that grew to this size over time would have.
  await write(db, async (trx) => await sql`ANALYZE`.execute(trx))
  return authorIds
}

/** The database's plan for the very query the list runs (built by the repository). */
async function planFor (database: DatabaseHandle, after: Row | undefined, authorId?: bigint): Promise<string> {
  const position = after === undefined ? undefined : { key: createdAtKey.keyOf(after), id: after.id }
  const explain = database.dialect === 'postgres' ? 'EXPLAIN ' : 'EXPLAIN QUERY PLAN '
  const plans: string[] = []
  // Two queries on SQLite after a cursor (src/db/keyset.ts): the rest of a tie, then beyond it.
  for (const built of listPostsQueries(database.db, database.dialect, postListing({ authorId: authorId?.toString() }), PAGE + 1, position)) {
    const query = built.compile()
    const result = await database.db.executeQuery<Record<string, string>>(CompiledQuery.raw(explain + query.sql, [...query.parameters]))
    plans.push(result.rows.map((r) => '    ' + (r.detail ?? r['QUERY PLAN'] ?? JSON.stringify(r))).join('\n'))
  }
  return plans.join('\n    --- then\n')
}

async function run (target: Target): Promise<void> {
  console.log(`\n--- ${target.name} ---`)
  // The rate limit is on, as users run the service, but high enough for the thousands of requests here.
  const config = loadConfig({ DATABASE_URL: target.url, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000' })
  const database = openDatabase(config.databaseUrl)
  try {
    await migrateToLatest(database.db, database.dialect)
    const seedStart = performance.now()
    const authorIds = await seed(database)
    const count = await database.db.selectFrom('posts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    console.log(`seeded ${Number(count.n).toLocaleString('en')} posts by ${AUTHORS} authors in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`)

    // The cursors a client would hold after paging past the 99,000th newest post (all posts)
    // and past the 9,900th newest post of one author (a tenth of the table). Found by OFFSET
    // here, once, in the set-up only.
    // Each row with the one after it, which says whether the next page starts among equal times.
    const newest = database.db.selectFrom('posts').select(['id', 'created_at']).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(2)
    const [deepRow, afterDeep] = await newest.offset(DEEP - 1).execute()
    const [middleRow, afterMiddle] = await newest.offset(POSTS / 2 - 1).execute()
    const author = authorIds[3]!
    const [deepAuthorRow, afterDeepAuthor] = await newest.where('author_id', '=', author).offset(DEEP / AUTHORS - 1).execute()
    const cursor = (row: Row, next: Row | undefined, authorId?: bigint) => sortedCursorOf(postListing({ authorId: authorId?.toString() }).fingerprint, createdAtKey.keyOf)(row, next)

    const app = await buildApp({ config, database, logger: false })
    await app.ready()
    const cases = [
      { name: 'first page          ', url: `/v1/posts?limit=${PAGE}` },
      { name: `after post ${(POSTS / 2).toLocaleString('en')}   `, url: `/v1/posts?limit=${PAGE}&cursor=${cursor(middleRow!, afterMiddle)}` },
      { name: `after post ${DEEP.toLocaleString('en')}   `, url: `/v1/posts?limit=${PAGE}&cursor=${cursor(deepRow!, afterDeep)}` },
      { name: 'author, first page  ', url: `/v1/posts?limit=${PAGE}&authorId=${author}` },
      { name: `author, after ${(DEEP / AUTHORS).toLocaleString('en')} `, url: `/v1/posts?limit=${PAGE}&authorId=${author}&cursor=${cursor(deepAuthorRow!, afterDeepAuthor, author)}` }
    ]
    for (const c of cases) {
      const res = await app.inject({ method: 'GET', url: c.url })
      if (res.statusCode !== 200 || res.json().length !== PAGE || res.headers.link === undefined) {
        throw new Error(`${c.url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
      }
    }
    // Warm up, then alternate the cases round by round so that drift touches all alike.
    for (let i = 0; i < 100; i++) for (const c of cases) await app.inject({ method: 'GET', url: c.url })
    const times = cases.map(() => [] as number[])
    for (let i = 0; i < ROUNDS; i++) {
      for (const [k, c] of cases.entries()) {
        times[k]!.push(await time(async () => {
          // Every timed answer is a full page (a 429 or an error page would time something else).
          const res = await app.inject({ method: 'GET', url: c.url })
          if (res.statusCode !== 200) throw new Error(`${c.url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
        }))
      }
    }
    console.log(`GET /v1/posts?limit=${PAGE} through app.inject, ${ROUNDS} rounds each:`)
    for (const [k, c] of cases.entries()) {
      console.log(`  ${c.name} median ${median(times[k]!).toFixed(3)} ms   p90 ${quantile(times[k]!, 0.9).toFixed(3)} ms`)
    }
    console.log(`  ratio middle/first (all posts): ${(median(times[1]!) / median(times[0]!)).toFixed(2)}`)
    console.log(`  ratio deep/first (all posts):   ${(median(times[2]!) / median(times[0]!)).toFixed(2)}   (1.00 = same cost at any depth)`)
    console.log(`  ratio deep/first (one author):  ${(median(times[4]!) / median(times[3]!)).toFixed(2)}`)

    console.log('query plan, first page:')
    console.log(await planFor(database, undefined))
    console.log(`query plan, page after post ${DEEP.toLocaleString('en')}:`)
    console.log(await planFor(database, deepRow!))
    console.log('query plan, one author, deep page:')
    console.log(await planFor(database, deepAuthorRow!, author))

    // For contrast only (the API never does this): the same deep page by OFFSET, straight SQL.
    const keyset = []; const offset = []
    for (let i = 0; i < 30; i++) {
      keyset.push(await time(() => database.db.selectFrom('posts').select(['id', 'title']).where(sql<boolean>`(created_at, id) < (${deepRow!.created_at}, ${deepRow!.id})`).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(PAGE + 1).execute()))
      offset.push(await time(() => database.db.selectFrom('posts').select(['id', 'title']).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(PAGE + 1).offset(DEEP).execute()))
    }
    console.log(`contrast, plain SQL for the page after post ${DEEP.toLocaleString('en')}: keyset median ${median(keyset).toFixed(3)} ms, OFFSET median ${median(offset).toFixed(3)} ms (${(median(offset) / median(keyset)).toFixed(0)}x)`)
    await app.close()
  } finally {
    await database.db.destroy().catch(() => {})
    await target.drop()
  }
}

const targets: Target[] = [await target('SQLite')]
if (process.env.BENCH_DATABASE_URL !== undefined && process.env.BENCH_DATABASE_URL !== '') targets.push(await target('PostgreSQL', process.env.BENCH_DATABASE_URL))
for (const target of targets) await run(target)
