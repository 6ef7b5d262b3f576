// `npm run bench`: the service against the bare floor and a peer, side by side in one run, per database.
//
// For each database (SQLite always; PostgreSQL too when BENCH_DATABASE_URL names a server where
// a scratch database may be created): seed a fresh database through the data layer, build the
// service and start it as `npm start` does (its Node.js flags and dist/server.js, production
// settings, logs at info to a file, metrics on, the rate limiter on with a limit too high to
// refuse), then on the same database:
//
// - the floor (bench/floor.ts): node:http, per read ONE prepared statement with the service's
//   SQL, JSON.stringify of what it returns and res.end, nothing else (no representation, ETag,
//   validation or logging); per write, the service's statements in one transaction with the
//   event row the service records, one commit per request, and an ETag only where the PATCH runs
//   need one;
// - for the SQLite writes, the group-commit floor: the same floor with its writes batched the
//   barest way the service's group commit does it (one transaction, a savepoint per request, one
//   COMMIT for what arrived meanwhile: FLOOR_COMMIT=group);
// - the peer (bench/peer.ts, SQLite only): the two list and post reads as a team would write them
//   without this service, Express 5 + better-sqlite3 + pino-http logging at info to a file;
// - for the writes that record events (creating a post, editing one, placing an order): the
//   service again, started the same way, with its event recording taken out by module hooks
//   (bench/without-events/): what the same writes cost without events, in the same run.
//
// Each route is driven by a load generator on the other core: a warm-up, then rounds alternating
// service, floor and peer (A B C A B C …; A B where the peer has no such route), so that drift in
// the machine's load touches all alike; every figure is the median over the rounds (a ratio: the
// median of the per-round ratios). With taskset, the servers run on core 0 and the generator on
// core 1. The generator:
//
// - the GET routes (post-by-id, list, deep, product-by-id), in a full run: wrk (`apt-get install
//   wrk`), one thread, the same connections and seconds, a Lua script drawing the random ids. The
//   floor answers these at tens of thousands a second; autocannon (JavaScript, in this process)
//   used 95-98 % of its core to keep up, so the floor's figure could be the generator's, and the
//   service's ratio to it then reads high. wrk asks for as much with about 60 % of the core.
//   Without wrk on the PATH they fall back to autocannon, with a note that their figures may be
//   generator-bound;
// - the writes (a few thousand a second, with per-request state: tokens, If-Match pools), the
//   log-in burst, and every route in --smoke (an exact number of requests, each status checked):
//   autocannon in this process.
//
// The generator's CPU time per run (wrk's process, or this one for autocannon) is printed per
// route, with a warning for a run where it used more than 90 % of its core (then the generator,
// not the server, may have set the pace).
//
// Beside req/s, each server's CPU time per answered request, user and system apart: the time of
// its process, every thread of it (the main thread, libuv's thread pool, V8's threads), read from
// /proc/<pid>/stat just before and just after each round (after the warm-up) and divided by the
// requests it answered in that round, 2xx and 3xx as the generator counted them (bench/load.ts,
// withServerCpu; the pid is the node process itself, which taskset execs in place). From it, the
// service's *own cost*: its CPU time per request less the floor's in the same round, in µs and as
// a share of the floor's (own / floor): what the service spends per request beyond the work the
// floor also does (the same statements, JSON, the socket write). Printed against the one-commit
// floor for every route, against the group-commit floor for the SQLite writes, and for the peer
// as well; for the writes that record events, the service's figure less the service's without
// events is what events cost in CPU. Each is the median of the per-round differences, with the
// least and the greatest beside it. /proc counts whole clock ticks (`getconf CLK_TCK`, 10 ms at
// 100): the rounds of a full run are long enough for a tick to be about 1 % of a figure or less
// (a warning names any route and server where it is more); in --smoke it is 100 µs a request, so
// those figures only show that the instrument works. On PostgreSQL the database's own processes
// are not read, so its work is in neither figure.
//
// Prints one table per database and PASS/FAIL per target (with how far a FAIL misses); exits
// non-zero on any FAIL. Targets (ratio to the floor): SQLite, a post or a product by id ≥ 0.60,
// the list ≥ 0.65, creating a post, editing one and placing an order ≥ 1.5 against the
// one-commit floor and ≥ 0.80 against the group-commit floor, with a p99 latency no higher than
// the one-commit floor's, counting a view ≥ 0.70; PostgreSQL, the three reads ≥ 0.85 (its writes
// are measured against the floor with no goal); on both, recording events costs each of those
// three writes at most 5 % of its rate (1 - service / service without events, the median of the
// rounds' figures); the deep page within 1.1× of the first page's time; event-loop lag p99 <
// 20 ms during 32 concurrent log-ins; the service's peak RSS < 150 MiB. The CPU figures have no
// goal: the service's own cost is printed as an `info` line beside the verdicts.
//
//   npm run bench                          full run (100,000 posts, 3 rounds of 5 s per route and server)
//   npm run bench -- --smoke               small data, 100 requests per route and server: checks the bench
//                                          works; fails on any error or non-2xx answer; no goals
//   npm run bench -- --only=post-by-id,list   some routes only: post-by-id, list, deep, product-by-id, views,
//                                          create-post, patch-post, order; login (the log-in burst);
//                                          catalogue (the product-finding bench); keys (API key against token);
//                                          reset-burst (1,000 password resets and their mail)
//   BENCH_DATABASE_URL=postgres://…        also on PostgreSQL (a scratch database is created and dropped)
//   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=32   per-run length, rounds (at least 3; at least 7 for
//                                          the routes that record events), connections
//   BENCH_CPU_PROF=dir                     the service (and the service without events) run under `node --cpu-prof`;
//                                          profiles land in dir/service (and dir/without-events)
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import type autocannon from 'autocannon'
import { openDatabase } from '../src/db/database.js'
import { scratchDatabase } from '../test/scratch-database.js'
import { serviceArguments } from '../scripts/start-command.mjs'
import { buildService, clockTicksPerSecond, measure, measureWrk, median, randomIn, readRequests, pinLoadGenerator, PINNED, start, startFloor, startPeer, startService, withoutEvents, withServerCpu, WRK, type Costed, type Load, type Read, type Server } from './load.js'
import { FULL_SIZE, PASSWORD, seed, SMOKE_SIZE, type Seeded } from './seed.js'

const args = process.argv.slice(2)
const SMOKE = args.includes('--smoke')
const ONLY = args.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = SMOKE ? 1 : Math.max(3, Number(process.env.BENCH_ROUNDS ?? 3))
// The routes that record events run more rounds: what events cost them is a difference of a few
// per cent between two runs whose ratio moves by several points from one round to the next (the
// disk's fsync time on SQLite, PostgreSQL's background work on PostgreSQL), so one figure needs
// the median of more rounds.
const EVENT_ROUNDS = SMOKE ? 1 : Math.max(ROUNDS, 7)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const SMOKE_AMOUNT = 100
const SIZE = SMOKE ? SMOKE_SIZE : FULL_SIZE
const CPU_PROF = process.env.BENCH_CPU_PROF
/** The most that recording events may cost a write route: a share of its rate without them. */
const EVENT_BUDGET = 0.05
/** Above this share of its core, the load generator may have been the limit of a run. */
const GENERATOR_LIMIT = 0.9
/** wrk drives the GET routes in a full run (bench/load.ts, measureWrk). */
const USE_WRK = WRK && !SMOKE

type Database = 'SQLite' | 'PostgreSQL'
interface Route {
  key: string
  name: string
  /** The least median ratio of the service to the floor, per database; none: measured, no goal. */
  goal: Partial<Record<Database, number>>
  /** SQLite writes: the least median ratio to the group-commit floor; also run against it, and its p99 held to the one-commit floor's. */
  groupGoal?: number
  /** Whether the peer (bench/peer.ts) answers it. */
  peer?: boolean
  /** Whether it records events: then it runs on the service without events too, against EVENT_BUDGET. */
  events?: boolean
  /** The requests for one run against `server` (fresh state per run where a route needs it). */
  load: (server: Server) => Promise<autocannon.Request[]>
  /** A GET route's one request, for wrk in a full run (then `load` is not used). */
  read?: Read
  /** Called after each run against `server` (to return posts in flight to the pool). */
  after?: (server: Server) => Promise<void>
}

type Who = 'service' | 'floor' | 'group-floor' | 'peer' | 'without-events'
/** One server's runs of a route, in round order (each with the server's CPU time per answered request), and its peak RSS over them (MiB). */
interface Side { who: Who, runs: Costed[], rss: number }
interface Row { route: Route, sides: Side[] }

/** A GET route's request, for wrk (`read`) and for autocannon (`load`). */
const get = (read: Read): Pick<Route, 'read' | 'load'> => ({ read, load: async () => readRequests(read) })

const problems: string[] = []

function routes (data: Seeded): Route[] {
  // Reads and views avoid the posts the PATCH runs edit, so every tag those runs hold stays theirs.
  const readable = { first: data.editable[data.editable.length - 1]!.id + 1, last: data.postIds.last }
  const writer = data.users[0]!
  const buyer = data.users[1]!
  const json = { 'content-type': 'application/json' }
  const tokenOf = new Map(data.users.map((u) => [u.id, u.token]))

  // PATCH with If-Match: a pool of posts per server with the tag each last answered. A request
  // takes a post out of the pool (and notes it in its connection's context) and its answer puts
  // it back with the new tag, so every If-Match is current and no two connections edit the same
  // post at once.
  interface Edited { id: number, tag: string }
  const pools = new Map<string, { free: Edited[], out: Set<number> }>()
  const refill = async (server: Server, ids: number[]) => {
    const pool = pools.get(server.name)!
    for (const id of ids) {
      const res = await fetch(`${server.url}/v1/posts/${id}`)
      if (res.status !== 200) throw new Error(`${server.name}: GET /v1/posts/${id} answered ${res.status}`)
      await res.arrayBuffer()
      // The floors' reads carry no tag: a floor's first If-Match for a post is `*`, then its PATCH answers' tags.
      const tag = res.headers.get('etag') ?? (server.name.endsWith('floor') ? '*' : undefined)
      if (tag === undefined) throw new Error(`${server.name}: GET /v1/posts/${id} sent no ETag`)
      pool.free.push({ id, tag })
      pool.out.delete(id)
    }
  }
  const authorOf = new Map(data.editable.map((p) => [p.id, p.authorId]))
  // Separate posts for each server that edits them: they share one database.
  const editors: Who[] = ['service', 'floor', 'group-floor', 'without-events']
  const share = Math.floor(data.editable.length / editors.length)
  let edit = 0

  return [
    { key: 'post-by-id', name: 'GET /v1/posts/{id}', goal: { SQLite: 0.60, PostgreSQL: 0.85 }, peer: true, ...get({ prefix: '/v1/posts/', ids: readable }) },
    { key: 'list', name: 'GET /v1/posts?limit=20', goal: { SQLite: 0.65, PostgreSQL: 0.85 }, peer: true, ...get({ path: '/v1/posts?limit=20' }) },
    { key: 'deep', name: 'GET /v1/posts?limit=20&cursor=(90%)', goal: {}, ...get({ path: `/v1/posts?limit=20&cursor=${data.deepCursor}` }) },
    { key: 'product-by-id', name: 'GET /v1/products/{id}', goal: { SQLite: 0.60, PostgreSQL: 0.85 }, ...get({ prefix: '/v1/products/', ids: data.productIds }) },
    { key: 'views', name: 'POST /v1/posts/{id}/views', goal: { SQLite: 0.70 }, load: async () => [{ method: 'POST', setupRequest: (r) => ({ ...r, path: `/v1/posts/${randomIn(readable)}/views` }) }] },
    {
      key: 'create-post',
      name: 'POST /v1/posts',
      goal: { SQLite: 1.5 },
      groupGoal: 0.80,
      events: true,
      load: async () => [{ method: 'POST', path: '/v1/posts', headers: { ...json, authorization: `Bearer ${writer.token}` }, body: JSON.stringify({ title: 'A post from the bench', content: 'Written by autocannon, to measure the insert path.' }) }]
    },
    {
      key: 'patch-post',
      name: 'PATCH /v1/posts/{id} (If-Match)',
      goal: { SQLite: 1.5 },
      groupGoal: 0.80,
      events: true,
      load: async (server) => {
        if (!pools.has(server.name)) {
          pools.set(server.name, { free: [], out: new Set() })
          const offset = editors.indexOf(server.name as Who) * share
          await refill(server, data.editable.slice(offset, offset + Math.min(share, CONNECTIONS * 2)).map((p) => p.id))
        }
        const pool = pools.get(server.name)!
        return [{
          method: 'PATCH',
          setupRequest: (r, context) => {
            const post = pool.free.shift()
            if (post === undefined) throw new Error('the PATCH pool ran dry')
            pool.out.add(post.id)
            context.post = post
            edit += 1
            return {
              ...r,
              path: `/v1/posts/${post.id}`,
              headers: { ...json, authorization: `Bearer ${tokenOf.get(authorOf.get(post.id)!)!}`, 'if-match': post.tag },
              body: JSON.stringify({ title: `Edited ${edit}` })
            }
          },
          onResponse: (status, _body, context, headers) => {
            if (status !== 200) return
            const { id } = context.post as Edited
            pool.out.delete(id)
            pool.free.push({ id, tag: headers.etag ?? headers.ETag! })
          }
        }]
      },
      // A request cut off at the end of a run may or may not have been applied: ask for the tags,
      // once the server has answered what was still in flight (on PostgreSQL a PATCH applied
      // after the read of its tag left a stale tag in the pool: 412 in the next run).
      after: async (server) => {
        await new Promise((resolve) => setTimeout(resolve, 250))
        await refill(server, [...pools.get(server.name)!.out])
      }
    },
    {
      key: 'order',
      name: 'POST /v1/orders',
      goal: { SQLite: 1.5 },
      groupGoal: 0.80,
      events: true,
      load: async () => [{
        method: 'POST',
        path: '/v1/orders',
        headers: { ...json, authorization: `Bearer ${buyer.token}` },
        setupRequest: (r) => ({ ...r, body: JSON.stringify({ productId: randomIn(data.productIds), quantity: 1 }) })
      }]
    }
  ]
}

function loadFor (requests: autocannon.Request[], connections = CONNECTIONS, seconds = SECONDS): Load {
  return SMOKE ? { connections, seconds, amount: SMOKE_AMOUNT, requests } : { connections, seconds, requests }
}

/** Requests the service answered, over the whole run. */
let answered = 0
/** The highest event key in the database being measured (set per database by benchDatabase). */
let lastEvent: (() => Promise<number>) | undefined

/**
 * The highest event key once it stops moving: a server goes on answering the requests that
 * were in flight when its run ended (a few dozen), and their events must not count in the
 * next server's run.
 */
async function settledLastEvent (): Promise<number | undefined> {
  if (lastEvent === undefined) return undefined
  let last = await lastEvent()
  for (let look = 0; look < 100; look++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    const now = await lastEvent()
    if (now === last) return now
    last = now
  }
  throw new Error('events were still being recorded 10 s after a run ended')
}
async function runOnce (route: Route, server: Server, seconds = SECONDS): Promise<Costed> {
  const eventsBefore = route.events === true ? await settledLastEvent() : undefined
  // The requests are made ready first (PATCH's first asks the server for its posts' tags), so that
  // the server's CPU time is read around the measured run alone.
  const requests = USE_WRK && route.read !== undefined ? undefined : await route.load(server)
  const result = await withServerCpu(server, async () => requests === undefined
    ? await measureWrk(server.url, route.read!, CONNECTIONS, seconds)
    : await measure(server.url, loadFor(requests, CONNECTIONS, seconds)))
  if (server.name === 'service') answered += result.total
  if (eventsBefore !== undefined) {
    // The comparison means something only if the service recorded an event per write and the
    // service without events recorded none (the servers take turns; nothing else writes).
    const recorded = await lastEvent!() - eventsBefore
    const written = result.total - result.bad
    if (server.name === 'without-events' && recorded !== 0) problems.push(`without-events, ${route.name}: ${recorded} events recorded in a run; the hooks did not take recording out`)
    if (server.name === 'service' && recorded < written) problems.push(`service, ${route.name}: ${recorded} events recorded for ${written} writes`)
  }
  await route.after?.(server)
  if (result.bad > 0) problems.push(`${server.name}, ${route.name}: ${result.badDetail}`)
  return result
}

/** The route on each server in turn, round after round (A B C A B C …), after a warm-up of each. */
async function runRoute (route: Route, servers: Server[]): Promise<Row> {
  if (!SMOKE) for (const server of servers) await runOnce(route, server, 2)
  for (const server of servers) server.resetPeak()
  const row: Row = { route, sides: servers.map((server) => ({ who: server.name as Who, runs: [], rss: 0 })) }
  for (let round = 0; round < (route.events === true ? EVENT_ROUNDS : ROUNDS); round++) {
    for (const [i, server] of servers.entries()) {
      const side = row.sides[i]!
      side.runs.push(await runOnce(route, server))
      side.rss = Math.max(side.rss, server.peakRss())
    }
  }
  return row
}

const sideOf = (row: Row, who: Who): Side | undefined => row.sides.find((s) => s.who === who)

/** The median over the rounds of `who`'s req/s against a floor's (the one-commit floor by default) in the same round. */
function ratioToFloor (row: Row, who: Who, to: Who = 'floor'): number | undefined {
  const mine = sideOf(row, who)
  const floor = sideOf(row, to)
  return mine === undefined || floor === undefined ? undefined : median(mine.runs.map((m, i) => m.rps / floor.runs[i]!.rps))
}

/** What recording events cost the route in each round: 1 - the service's rate / the service's without events. */
function eventCosts (row: Row): number[] | undefined {
  const without = sideOf(row, 'without-events')
  const service = sideOf(row, 'service')!
  return without === undefined ? undefined : service.runs.map((m, i) => 1 - m.rps / without.runs[i]!.rps)
}

/** The median over the rounds of eventCosts. */
function eventCost (row: Row): number | undefined {
  const costs = eventCosts(row)
  return costs === undefined ? undefined : median(costs)
}

/** Per round: `who`'s CPU time per answered request less `to`'s in the same round, µs (`who`'s own cost over `to`). */
function cpuOver (row: Row, who: Who, to: Who, part: 'user' | 'total' = 'total'): number[] | undefined {
  const mine = sideOf(row, who)
  const floor = sideOf(row, to)
  return mine === undefined || floor === undefined ? undefined : mine.runs.map((m, i) => m.cpu[part] - floor.runs[i]!.cpu[part])
}

/** Per round: `who`'s own cost over `to` as a share of `to`'s CPU time per answered request. */
function cpuShareOver (row: Row, who: Who, to: Who): number[] | undefined {
  const floor = sideOf(row, to)
  return floor === undefined ? undefined : cpuOver(row, who, to)?.map((own, i) => own / floor.runs[i]!.cpu.total)
}

interface Burst { logins: number, lagP50: number, lagP99: number, quietP99: number, seconds: number }

/**
 * 32 log-ins at once (each an Argon2id verification on the thread pool), with a stream of GETs
 * beside them. The event-loop lag is read from the client's side: the GETs' latency while the
 * log-ins run, against the same stream alone.
 */
async function loginBurst (service: Server, data: Seeded): Promise<Burst> {
  const seconds = SMOKE ? 1 : SECONDS
  const reads = (): Load => ({ connections: 4, seconds, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: `/v1/posts/${randomIn(data.postIds)}` }) }] })
  const quiet = await measure(service.url, reads())
  let next = 0
  const logins: Load = {
    connections: 32,
    seconds,
    ...(SMOKE ? { amount: 32 } : {}),
    requests: [{
      method: 'POST',
      path: '/v1/sessions',
      headers: { 'content-type': 'application/json' },
      setupRequest: (r) => ({ ...r, body: JSON.stringify({ email: data.users[next++ % data.users.length]!.email, password: PASSWORD }) })
    }]
  }
  // The GETs run exactly as long as the log-ins do.
  const stream = start(service.url, { ...reads(), seconds: 3600 })
  const login = await measure(service.url, logins)
  stream.stop()
  const during = await stream.done
  answered += quiet.total + login.total + during.total
  for (const [what, m] of [['log-in burst', login], ['GETs during the burst', during], ['GETs alone', quiet]] as const) {
    if (m.bad > 0) problems.push(`service, ${what}: ${m.badDetail}`)
    if (m.total === 0) problems.push(`service, ${what}: no answer at all`)
  }
  return { logins: login.rps, lagP50: during.p50, lagP99: during.p99, quietP99: quiet.p99, seconds: login.total / login.rps }
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const percent = (share: number) => `${Math.round(share * 100)} %`
const WHO: Who[] = ['service', 'floor', 'group-floor', 'peer']
const NAME: Record<Who, string> = { service: 'service', floor: 'floor', 'group-floor': 'group-commit floor', peer: 'peer', 'without-events': 'service without events' }

/** A figure over the rounds: their median, then (over several rounds) the least and the greatest; `signed` for a difference. */
function spread (values: number[], digits = 1, signed = false): string {
  const figure = (n: number) => (signed && n > 0 ? '+' : '') + fmt(n, digits)
  if (values.length === 1) return figure(values[0]!)
  return `${figure(median(values))} (${figure(Math.min(...values))}${signed ? ' … ' : '–'}${figure(Math.max(...values))})`
}

/** The comparisons of CPU per request printed as own cost: the service (and the peer) over each floor that ran. */
const OWN: Array<[Who, Who]> = [['service', 'floor'], ['service', 'group-floor'], ['peer', 'floor']]

function printTable (database: Database, rows: Row[], burst: Burst | undefined, highWater: number): void {
  console.log(`\n### ${database}\n`)
  console.log('| route | service req/s | floor req/s | group-commit floor req/s | peer req/s | service / floor | service / group-commit floor | peer / floor | p50 / p99 ms: service · floor · group floor · peer | peak RSS MiB: service · floor · group floor · peer | generator CPU: service · floor · group floor · peer |')
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  /** A figure of a server's runs of a route: the median over the rounds. */
  const mid = (side: Side, k: 'rps' | 'p50' | 'p99' | 'generatorCpu') => median(side.runs.map((m) => m[k]))
  for (const r of rows) {
    // One cell per server, '—' for one that does not answer the route.
    const each = (cell: (side: Side) => string) => WHO.map((who) => { const side = sideOf(r, who); return side === undefined ? '—' : cell(side) })
    const ratio = (who: Who, to: Who = 'floor') => { const value = ratioToFloor(r, who, to); return value === undefined ? '—' : value.toFixed(2) }
    const [service, floor, group, peer] = each((side) => fmt(mid(side, 'rps')))
    console.log(`| ${r.route.name} | ${service} | ${floor} | ${group} | ${peer} | ${ratio('service')} | ${ratio('service', 'group-floor')} | ${ratio('peer')} | ` +
      `${each((side) => `${mid(side, 'p50')} / ${mid(side, 'p99')}`).join(' · ')} | ${each((side) => fmt(side.rss)).join(' · ')} | ` +
      `${each((side) => percent(mid(side, 'generatorCpu'))).join(' · ')} |`)
  }
  const cpu = (side: Side, part: 'user' | 'system' | 'total') => spread(side.runs.map((m) => m.cpu[part]))
  console.log('\nCPU time per answered request, µs: the server process\'s user and system time (every thread of it), read from /proc/<pid>/stat ' +
    'just before and after each round, over the requests it answered in the round (2xx and 3xx); the median of the rounds, their least–greatest in brackets.' +
    (database === 'PostgreSQL' ? ' PostgreSQL\'s own processes are not read: the database\'s work is in neither server\'s figure.' : '') + '\n')
  console.log('| route | server | req/s | user µs/req | system µs/req | total µs/req |')
  console.log('|---|---|---:|---:|---:|---:|')
  for (const r of rows) {
    for (const [k, side] of r.sides.entries()) {
      console.log(`| ${k === 0 ? r.route.name : ''} | ${NAME[side.who]} | ${fmt(mid(side, 'rps'))} | ${cpu(side, 'user')} | ${cpu(side, 'system')} | ${cpu(side, 'total')} |`)
    }
  }
  console.log('\nOwn cost: a server\'s CPU time per answered request less the floor\'s in the same round, what it spends beyond the work the floor also does; ' +
    'own / floor: that as a share of the floor\'s CPU time per request. The median of the rounds, their least and greatest in brackets.\n')
  console.log('| route | server − floor | own cost µs/req | own user µs/req | own / floor % |')
  console.log('|---|---|---:|---:|---:|')
  for (const r of rows) {
    let first = true
    for (const [who, to] of OWN) {
      const total = cpuOver(r, who, to)
      if (total === undefined) continue
      console.log(`| ${first ? r.route.name : ''} | ${NAME[who]} − ${NAME[to]} | ${spread(total, 1, true)} | ${spread(cpuOver(r, who, to, 'user')!, 1, true)} | ` +
        `${spread(cpuShareOver(r, who, to)!.map((share) => share * 100), 0, true)} |`)
      first = false
    }
  }
  const recorded = rows.filter((r) => sideOf(r, 'without-events') !== undefined)
  if (recorded.length > 0) {
    console.log('\nWhat recording events costs the writes: the service against itself with event recording taken out (bench/without-events/), same run, rounds alternating; ' +
      'in CPU, the service\'s CPU time per answered request less the service\'s without events (median, least … greatest).\n')
    console.log('| route | service req/s | without events req/s | cost of events | per round | events\' CPU µs/req | p50 / p99 ms: service · without |')
    console.log('|---|---:|---:|---:|---:|---:|---:|')
    for (const r of recorded) {
      const [service, without] = [sideOf(r, 'service')!, sideOf(r, 'without-events')!]
      console.log(`| ${r.route.name} | ${fmt(mid(service, 'rps'))} | ${fmt(mid(without, 'rps'))} | ${(eventCost(r)! * 100).toFixed(1)} % | ` +
        `${eventCosts(r)!.map((cost) => (cost * 100).toFixed(1)).join(' · ')} | ${spread(cpuOver(r, 'service', 'without-events')!, 1, true)} | ` +
        `${mid(service, 'p50')} / ${mid(service, 'p99')} · ${mid(without, 'p50')} / ${mid(without, 'p99')} |`)
    }
  }
  console.log(`\nThe generator's CPU is its CPU time over each run as a share of its one core (median over the rounds): ${USE_WRK
    ? 'wrk\'s process for the GET routes, this process (autocannon) for the others'
    : 'this process\'s (autocannon)'}.`)
  for (const warning of generatorWarnings(database, rows)) console.log(warning)
  const coarsest = rows.flatMap((r) => r.sides.map((side) => ({ r, side, tick: Math.max(...side.runs.map((m) => m.cpu.tick)) })))
    .reduce<{ r: Row, side: Side, tick: number } | undefined>((a, b) => a === undefined || b.tick > a.tick ? b : a, undefined)
  if (coarsest !== undefined) {
    console.log(`/proc counts CPU time in clock ticks (1/${clockTicksPerSecond()} s): over a round's answered requests a tick is at most ${coarsest.tick.toFixed(2)} µs/req in this run ` +
      `(${coarsest.r.route.name}, ${NAME[coarsest.side.who]}), and each user and system figure is known to about that.` +
      (SMOKE ? ' The smoke run\'s 100 requests make that coarse: its CPU figures show that the instrument works, no more.' : ''))
  }
  for (const warning of tickWarnings(database, rows)) console.log(warning)
  if (burst !== undefined) {
    console.log(`\nLog-in burst (service only, ${burst.seconds.toFixed(1)} s): ${fmt(burst.logins, 1)} log-ins/s with 32 in flight; ` +
      `a stream of GETs beside it (4 connections): p50 ${burst.lagP50} ms, p99 ${burst.lagP99} ms (the same stream alone: p99 ${burst.quietP99} ms). ` +
      'Event-loop lag is read as that GET latency, seen by the client (an upper bound: it includes each GET\'s own work).')
  }
  console.log(`Service peak resident memory over the whole run (VmHWM): ${fmt(highWater)} MiB`)
}

/** A warning per run in which the load generator used more than GENERATOR_LIMIT of its core. */
function generatorWarnings (database: Database, rows: Row[]): string[] {
  return rows.flatMap((r) => r.sides.flatMap((side) => side.runs.flatMap((m, round) => m.generatorCpu > GENERATOR_LIMIT
    ? [`WARN  ${database}: ${r.route.name}, ${side.who}, round ${round + 1}: the load generator used ${percent(m.generatorCpu)} of its core; it, not the server, may have set the pace`]
    : [])))
}

/** Above this share of a server's CPU time per request, a clock tick over a round's requests is too coarse a unit. */
const TICK_LIMIT = 0.01

/** A warning per route and server whose rounds were too short for /proc's clock ticks to resolve its CPU time per request (full runs). */
function tickWarnings (database: Database, rows: Row[]): string[] {
  if (SMOKE) return []
  return rows.flatMap((r) => r.sides.flatMap((side) => {
    const tick = Math.max(...side.runs.map((m) => m.cpu.tick))
    const total = median(side.runs.map((m) => m.cpu.total))
    return tick > TICK_LIMIT * total
      ? [`WARN  ${database}: ${r.route.name}, ${NAME[side.who]}: a clock tick over a round's requests is ${tick.toFixed(2)} µs/req, ${(tick / total * 100).toFixed(1)} % of its ${total.toFixed(1)} µs/req; longer rounds (BENCH_SECONDS) would resolve it`]
      : []
  }))
}

function verdicts (database: Database, rows: Row[], burst: Burst | undefined, highWater: number): string[] {
  const lines: string[] = []
  /** `miss`: how far a failed figure is from its goal, in words. */
  const check = (name: string, ok: boolean, figure: string, miss: string) =>
    lines.push(ok ? `PASS  ${database}: ${name} (${figure})` : `FAIL  ${database}: ${name} (${figure}; ${miss})`)
  for (const r of rows) {
    const cost = eventCost(r)
    if (cost !== undefined) {
      check(`${r.route.name}: recording events costs ≤ ${percent(EVENT_BUDGET)} of its rate`, cost <= EVENT_BUDGET, `${(cost * 100).toFixed(1)} %`,
        `${((cost - EVENT_BUDGET) * 100).toFixed(1)} points over`)
    }
    const ratio = ratioToFloor(r, 'service')!
    const toGroup = ratioToFloor(r, 'service', 'group-floor')
    if (toGroup !== undefined && r.route.groupGoal !== undefined) {
      check(`${r.route.name} ≥ ${r.route.groupGoal.toFixed(2)}× the group-commit floor`, toGroup >= r.route.groupGoal, `${toGroup.toFixed(3)}×`,
        `short by ${(r.route.groupGoal - toGroup).toFixed(3)}×`)
      // Latency under the same 32 clients: a batch waits for its commit, never for an artificial delay.
      const p99 = (who: Who) => median(sideOf(r, who)!.runs.map((m) => m.p99))
      check(`${r.route.name} p99 ≤ the one-commit floor's`, p99('service') <= p99('floor'), `${p99('service')} ms against ${p99('floor')} ms`,
        `${p99('service') - p99('floor')} ms over`)
    }
    // The service's own cost in CPU time: measured, no goal.
    for (const to of ['floor', 'group-floor'] as const) {
      const own = cpuOver(r, 'service', to)
      if (own === undefined) continue
      lines.push(`info  ${database}: ${r.route.name} own cost ${spread(own, 1, true)} µs/req of CPU over the ${NAME[to]}, ` +
        `${spread(cpuShareOver(r, 'service', to)!.map((share) => share * 100), 0, true)} % of that floor's CPU per request (no goal)`)
    }
    const goal = r.route.goal[database]
    if (goal === undefined) {
      lines.push(`info  ${database}: ${r.route.name} ${ratio.toFixed(2)}× floor (no goal)`)
      continue
    }
    check(`${r.route.name} ≥ ${goal.toFixed(2)}× floor`, ratio >= goal, `${ratio.toFixed(3)}×`,
      `short by ${(goal - ratio).toFixed(3)}×, ${percent((goal - ratio) / goal)} below the goal`)
  }
  const first = rows.find((r) => r.route.key === 'list')
  const deep = rows.find((r) => r.route.key === 'deep')
  if (first !== undefined && deep !== undefined) {
    // Per round: how much slower the deep page is than the first, in the service.
    const deepRuns = sideOf(deep, 'service')!.runs
    const slowdown = median(sideOf(first, 'service')!.runs.map((m, i) => m.rps / deepRuns[i]!.rps))
    check('deep page within 1.1× of the first', slowdown <= 1.1, `${slowdown.toFixed(2)}× the first page's time`, `${(slowdown - 1.1).toFixed(2)}× over`)
  }
  if (burst !== undefined) {
    check('event-loop lag p99 during the log-in burst < 20 ms', burst.lagP99 < 20, `${burst.lagP99} ms, client-side GET latency`, `${burst.lagP99 - 20} ms over`)
  }
  check('service peak RSS < 150 MiB', highWater < 150, `${fmt(highWater)} MiB`, `${fmt(highWater - 150)} MiB over`)
  return lines
}

async function benchDatabase (label: Database, postgresAdminUrl: string | undefined, work: string): Promise<string[]> {
  const scratch = await scratchDatabase('bench', postgresAdminUrl)
  try {
    const started = Date.now()
    const data = await seed(scratch.url, SIZE)
    console.log(`${label}: seeded ${fmt(SIZE.users)} users (one session each), ${fmt(SIZE.posts)} posts, ${fmt(SIZE.products)} products, ${fmt(SIZE.orders)} orders in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    const selected = routes(data).filter((r) => ONLY === undefined || ONLY.includes(r.key))
    const serviceLog = join(work, `service-${label}.log`)
    const peerLog = join(work, `peer-${label}.log`)
    const profiled = (who: Who) => CPU_PROF !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${resolve(CPU_PROF, who)}`] : []
    const service = await startService([...profiled('service'), ...SERVICE_ENTRY], scratch.url, serviceLog)
    const floor = await startFloor(scratch.url, join(work, `floor-${label}.log`))
    // The group-commit floor, for the SQLite writes.
    const groupFloor = label === 'SQLite' && selected.some((r) => r.groupGoal !== undefined || r.key === 'views')
      ? await startFloor(scratch.url, join(work, `group-floor-${label}.log`), 'group')
      : undefined
    const eventless = selected.some((r) => r.events === true)
      ? await startService(withoutEvents([...profiled('without-events'), ...SERVICE_ENTRY]), scratch.url, join(work, `without-events-${label}.log`), 'without-events')
      : undefined
    // The peer is written for SQLite only.
    const peer = label === 'SQLite' && selected.some((r) => r.peer === true) ? await startPeer(scratch.url, peerLog) : undefined
    const answeredBefore = answered
    const events = eventless !== undefined ? openDatabase(scratch.url) : undefined
    lastEvent = events === undefined
      ? undefined
      : async () => Number((await events.db.selectFrom('events').select((eb) => eb.fn.max('id').as('last')).executeTakeFirstOrThrow()).last ?? 0)
    try {
      const rows: Row[] = []
      for (const route of selected) {
        process.stderr.write(`${label}: ${route.name}\n`)
        rows.push(await runRoute(route, [service, floor,
          ...(groupFloor !== undefined && (route.groupGoal !== undefined || route.key === 'views') ? [groupFloor] : []),
          ...(peer !== undefined && route.peer === true ? [peer] : []), ...(eventless !== undefined && route.events === true ? [eventless] : [])]))
      }
      const burst = ONLY === undefined || ONLY.includes('login') ? await loginBurst(service, data) : undefined
      const highWater = service.highWater()
      printTable(label, rows, burst, highWater)
      const logLines = (file: string, mark: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l.includes(mark)).length
      console.log(`Service log: ${fmt(logLines(serviceLog, '"reqId"'))} lines naming a request id, at info, written to a file, for ${fmt(answered - answeredBefore)} requests answered.`)
      if (peer !== undefined) console.log(`Peer log: ${fmt(logLines(peerLog, '"request completed"'))} lines of a completed request (pino-http at info, written to a file).`)
      return SMOKE ? [] : [...verdicts(label, rows, burst, highWater), ...generatorWarnings(label, rows), ...tickWarnings(label, rows)]
    } finally {
      await service.stop()
      await floor.stop()
      await groupFloor?.stop()
      await peer?.stop()
      await eventless?.stop()
      await events?.db.destroy()
    }
  } finally {
    await scratch.drop()
  }
}

pinLoadGenerator()
console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${fmt(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}; ` +
  (PINNED ? 'service, floor and peer pinned to core 0, load generator to core 1 (taskset).' : 'no pinning (taskset or a second core missing).'))
console.log(`Runs: ${SMOKE ? `smoke, ${SMOKE_AMOUNT} requests per route and server` : `warm-up 2 s each, then ${ROUNDS} rounds (${EVENT_ROUNDS} for the writes that record events) × ${SECONDS} s per route, servers alternating`}, ${CONNECTIONS} connections.`)
if (SMOKE) console.log('Load generator: autocannon, in this process.')
else if (WRK) console.log('Load generator: wrk (one thread) for the GET routes; autocannon, in this process, for the writes and the log-in burst.')
else console.log('Load generator: autocannon, in this process, for every route (wrk is not on the PATH): the GET routes\' figures, the floor\'s first, may be generator-bound; `apt-get install wrk` fixes it.')
// The full run builds and starts dist/server.js as `npm start` does, with its Node.js flags. The
// smoke run (CI) starts the same entry point from source through tsx: it checks that the bench
// and every route work, and spares the build (CI has already type-checked the same code).
if (!SMOKE) buildService()
const SERVICE_ENTRY = serviceArguments({ fromSource: SMOKE })
const work = mkdtempSync(join(tmpdir(), 'bench-'))
const results: string[] = []
try {
  results.push(...await benchDatabase('SQLite', undefined, work))
  const pgUrl = process.env.BENCH_DATABASE_URL
  if (pgUrl !== undefined && pgUrl !== '') results.push(...await benchDatabase('PostgreSQL', pgUrl, work))
} finally {
  rmSync(work, { recursive: true, force: true })
}
if (results.length > 0) console.log('\n' + results.join('\n'))
// Finding products (filters, search, sort, deep pages) over 100,000 products, in its own process
// after the route runs (bench/catalogue.bench.ts; `--only=catalogue` runs it alone).
let catalogueFailed = false
if (ONLY === undefined || ONLY.includes('catalogue')) {
  console.log('\n## Finding products (npm run bench:catalogue)')
  const catalogue = spawnSync(process.execPath, ['--import', 'tsx', 'bench/catalogue.bench.ts', ...(SMOKE ? ['--smoke'] : [])], { stdio: 'inherit', env: process.env })
  catalogueFailed = catalogue.status !== 0
}
// An API key against a log-in token on the same requests (bench/api-keys.bench.ts; `--only=keys` runs it alone).
let keysFailed = false
if (ONLY === undefined || ONLY.includes('keys')) {
  console.log('\n## API keys against log-in tokens (npm run bench:keys)')
  const keys = spawnSync(process.execPath, ['--import', 'tsx', 'bench/api-keys.bench.ts', ...(SMOKE ? ['--smoke'] : [])], { stdio: 'inherit', env: process.env })
  keysFailed = keys.status !== 0
}
// A burst of password resets and the mail they send (bench/password-reset-burst.bench.ts; `--only=reset-burst` runs it alone).
let resetFailed = false
if (ONLY === undefined || ONLY.includes('reset-burst')) {
  console.log('\n## A burst of password resets and their mail (npm run bench:reset-burst)')
  const reset = spawnSync(process.execPath, ['--import', 'tsx', 'bench/password-reset-burst.bench.ts', ...(SMOKE ? ['--smoke'] : [])], { stdio: 'inherit', env: process.env })
  resetFailed = reset.status !== 0
}
for (const problem of problems) console.error(`ERROR ${problem}`)
process.exit(problems.length > 0 || catalogueFailed || keysFailed || resetFailed || results.some((l) => l.startsWith('FAIL')) ? 1 : 0)
