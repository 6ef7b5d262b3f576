// The event feed (GET /v1/events) must cost the same at any depth: a page is one range of the
// feed table's primary key, each event joined by its own. This seeds 100,000 events on a fresh database (half public, a quarter one
// user's, a quarter spread over other users) and times, through app.inject, the first page against
// the page after the 99,000th event, as an administrator (every event), as that user (their own
// and the public ones) and with a type filter. It prints medians, the deep/first ratios and the
// database's query plans.
//
//   npm run bench:events                                         (SQLite, a fresh temporary file)
//   BENCH_DATABASE_URL=postgres://… npm run bench:events         (also PostgreSQL, a fresh database)
//   BENCH_ROUNDS=500 …                                           (optional: timed rounds)
import { performance } from 'node:perf_hooks'
import { CompiledQuery, sql } from 'kysely'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { openDatabase, type DatabaseHandle } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { listEventsQuery, type FeedQuery } from '../src/events/event.repository.js'
import { insertSession } from '../src/sessions/session.repository.js'
import { newToken } from '../src/auth/token.js'
import { scratchDatabase, type ScratchDatabase } from '../test/scratch-database.js'
import { write } from '../src/db/write.js'

const EVENTS = 100_000
const ROUNDS = Math.max(50, Number(process.env.BENCH_ROUNDS ?? 500))
const BATCH = 1000
const PAGE = 20
const DEEP = 99_000
const OTHERS = 10

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!

async function time (fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

interface Target extends ScratchDatabase { name: string }

/** Users, a session each for the reader and the admin, and the events, straight through Kysely. */
async function seed (database: DatabaseHandle): Promise<{ reader: bigint, readerToken: string, adminToken: string }> {
  const { db } = database
  const now = new Date()
  const iso = now.toISOString()
  const users: bigint[] = []
  for (let u = 0; u < OTHERS + 2; u++) {
    const row = await write(db, async (trx) => await trx.insertInto('users').values({ email: `user${u}@bench.example`, name: `User ${u}`, password_hash: 'not a real hash', role: u === 0 ? 'ADMIN' : 'USER', created_at: iso, updated_at: iso })
      .returning('id').executeTakeFirstOrThrow())
    users.push(row.id)
  }
  const [admin, reader, ...others] = users as [bigint, bigint, ...bigint[]]
  const tokens: string[] = []
  for (const user of [admin, reader]) {
    const { token, hash } = newToken()
    await write(db, async (trx) => { await insertSession(trx, user, hash, iso, new Date(now.getTime() + 86_400_000).toISOString()) })
    tokens.push(token)
  }
  await write(db, async (trx) => {
    for (let start = 0; start < EVENTS; start += BATCH) {
      const rows: Array<{ event_id: string, type: string, occurred_at: string, resource_type: string, resource_id: number, audience: bigint | null, data: string }> = []
      for (let i = start; i < Math.min(EVENTS, start + BATCH); i++) {
        const kind = i % 4
        const audience = kind < 2 ? null : kind === 2 ? reader : others[i % OTHERS]!
        const type = audience === null ? 'post.created' : 'order.created'
        rows.push({
          event_id: `evt_${String(i).padStart(20, '0')}`,
          type,
          occurred_at: new Date(now.getTime() - (EVENTS - i) * 1000).toISOString(),
          resource_type: type.split('.')[0]!,
          resource_id: i + 1,
          audience,
          data: `{"id":${i + 1},"title":"Event number ${i}","content":"What happened, as the resource's representation."}`
        })
      }
      // Numbered 1, 2, 3, … in the order seeded (the event id carries the order). On SQLite the
      // number is the event's key and the feed a view of the events.
      if (database.dialect === 'sqlite') {
        await trx.insertInto('events').values(rows.map((r, k) => ({ id: BigInt(start + k + 1), ...r })) as unknown as typeof rows).execute()
        continue
      }
      const inserted = await trx.insertInto('events').values(rows).returning(['id', 'event_id']).execute()
      await trx.insertInto('event_feed').values(inserted.map((r) => {
        const i = Number(r.event_id.slice(4))
        return { sequence: i + 1, event_pk: r.id, audience: rows[i - start]!.audience }
      })).execute()
    }
  })
  await write(db, async (trx) => await sql`ANALYZE`.execute(trx))
  return { reader, readerToken: tokens[1]!, adminToken: tokens[0]! }
}

async function planFor (database: DatabaseHandle, query: FeedQuery): Promise<string> {
  const compiled = listEventsQuery(database.db, query).compile()
  const explain = database.dialect === 'postgres' ? 'EXPLAIN ' : 'EXPLAIN QUERY PLAN '
  const result = await database.db.executeQuery<Record<string, string>>(CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]))
  return result.rows.map((r) => '    ' + (r.detail ?? r['QUERY PLAN'] ?? JSON.stringify(r))).join('\n')
}

async function run (target: Target): Promise<void> {
  console.log(`\n--- ${target.name} ---`)
  const config = loadConfig({ DATABASE_URL: target.url, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0', METRICS_PORT: '0' })
  const database = openDatabase(config.databaseUrl)
  try {
    await migrateToLatest(database.db, database.dialect)
    const seedStart = performance.now()
    const { reader, readerToken, adminToken } = await seed(database)
    console.log(`seeded ${EVENTS.toLocaleString('en')} events in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`)
    const app = await buildApp({ config, database, logger: false })
    await app.ready()
    const admin = { authorization: `Bearer ${adminToken}` }
    const user = { authorization: `Bearer ${readerToken}` }
    const cases = [
      { name: 'admin, first page         ', url: `/v1/events?limit=${PAGE}`, headers: admin },
      { name: `admin, after ${DEEP.toLocaleString('en')}       `, url: `/v1/events?limit=${PAGE}&after=${DEEP}`, headers: admin },
      { name: 'user, first page          ', url: `/v1/events?limit=${PAGE}`, headers: user },
      { name: `user, after ${DEEP.toLocaleString('en')}        `, url: `/v1/events?limit=${PAGE}&after=${DEEP}`, headers: user },
      { name: 'user, one type, first page', url: `/v1/events?limit=${PAGE}&type=order.created`, headers: user },
      { name: `user, one type, after ${DEEP.toLocaleString('en')}`, url: `/v1/events?limit=${PAGE}&type=order.created&after=${DEEP}`, headers: user }
    ]
    for (const c of cases) {
      const res = await app.inject({ method: 'GET', url: c.url, headers: c.headers })
      if (res.statusCode !== 200 || res.json().length !== PAGE) throw new Error(`${c.url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
    }
    for (let i = 0; i < 100; i++) for (const c of cases) await app.inject({ method: 'GET', url: c.url, headers: c.headers })
    const times = cases.map(() => [] as number[])
    for (let i = 0; i < ROUNDS; i++) {
      for (const [k, c] of cases.entries()) times[k]!.push(await time(() => app.inject({ method: 'GET', url: c.url, headers: c.headers })))
    }
    console.log(`GET /v1/events?limit=${PAGE} through app.inject, ${ROUNDS} rounds each:`)
    for (const [k, c] of cases.entries()) console.log(`  ${c.name}  median ${median(times[k]!).toFixed(3)} ms   p90 ${quantile(times[k]!, 0.9).toFixed(3)} ms`)
    for (const [label, first, deep] of [['admin', 0, 1], ['user', 2, 3], ['user, one type', 4, 5]] as const) {
      console.log(`  ratio deep/first (${label}): ${(median(times[deep]!) / median(times[first]!)).toFixed(2)}   (1.00 = same cost at any depth)`)
    }
    console.log(`query plan, admin, after ${DEEP}:`)
    console.log(await planFor(database, { after: BigInt(DEEP), limit: PAGE + 1, types: undefined, reader: 'all' }))
    console.log(`query plan, user, one type, after ${DEEP}:`)
    console.log(await planFor(database, { after: BigInt(DEEP), limit: PAGE + 1, types: ['order.created'], reader }))
    await app.close()
  } finally {
    await database.db.destroy().catch(() => {})
    await target.drop()
  }
}

const targets: Target[] = [{ name: 'SQLite', ...await scratchDatabase('bench-events') }]
if (process.env.BENCH_DATABASE_URL !== undefined && process.env.BENCH_DATABASE_URL !== '') {
  targets.push({ name: 'PostgreSQL', ...await scratchDatabase('bench-events', process.env.BENCH_DATABASE_URL) })
}
for (const target of targets) await run(target)
