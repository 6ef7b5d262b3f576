// `npm run bench`: the service against its floor, side by side in one run, per database.
//
// For each database (SQLite always; PostgreSQL too when BENCH_DATABASE_URL names a server where
// a scratch database may be created): seed a fresh database through the data layer, build the
// service and start it as `npm start` does (its Node.js flags and dist/server.js, production
// settings, logs at info to a file, metrics on, the rate limiter on with a limit too high to
// refuse), start the floor server (bench/floor.ts) on the same database, then drive each route with autocannon:
// a warm-up, then rounds alternating service and floor (A B A B), so that drift in the machine's
// load touches both alike. Prints one table per database and PASS/FAIL per target.
//
//   npm run bench                          full run (100,000 posts, 3 rounds of 5 s per route and target)
//   npm run bench -- --smoke               small data, a few hundred requests per route: checks the bench
//                                          works; fails on any error or non-2xx answer; no ratio goals
//   npm run bench -- --only=post-by-id,list   some routes only (`catalogue`: the product-finding bench)
//   BENCH_DATABASE_URL=postgres://…        also on PostgreSQL (a scratch database is created and dropped)
//   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=32   per-run length, rounds, connections
//   BENCH_CPU_PROF=dir                     the service runs under `node --cpu-prof`; profiles land in dir
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import type autocannon from 'autocannon'
import { scratchDatabase } from '../test/scratch-database.js'
import { serviceArguments } from '../scripts/start-command.mjs'
import { buildService, measure, median, pinLoadGenerator, PINNED, start, startFloor, startService, type Load, type Measured, type Server } from './load.js'
import { FULL_SIZE, PASSWORD, seed, SMOKE_SIZE, type Seeded } from './seed.js'

const args = process.argv.slice(2)
const SMOKE = args.includes('--smoke')
const ONLY = args.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = SMOKE ? 1 : Math.max(3, Number(process.env.BENCH_ROUNDS ?? 3))
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const SMOKE_AMOUNT = 100
const SIZE = SMOKE ? SMOKE_SIZE : FULL_SIZE
const CPU_PROF = process.env.BENCH_CPU_PROF

type Kind = 'read' | 'write' | 'page'
interface Route {
  key: string
  name: string
  kind: Kind
  /** The requests for one run against `server` (fresh state per run where a route needs it). */
  load: (server: Server) => Promise<autocannon.Request[]>
  /** Called after each run against `server` (to return posts in flight to the pool). */
  after?: (server: Server) => Promise<void>
}

interface Row { route: Route, service: Measured[], floor: Measured[], ratios: number[], rss: number }

const random = (range: { first: number, last: number }) => range.first + Math.floor(Math.random() * (range.last - range.first + 1))

const problems: string[] = []

function routes (data: Seeded): Route[] {
  // Reads and views avoid the posts the PATCH runs edit, so every tag those runs hold stays theirs.
  const readable = { first: data.editable[data.editable.length - 1]!.id + 1, last: data.postIds.last }
  const writer = data.users[0]!
  const buyer = data.users[1]!
  const json = { 'content-type': 'application/json' }
  const tokenOf = new Map(data.users.map((u) => [u.id, u.token]))

  // PATCH with If-Match: a pool of posts per server with the tag each last answered. A request
  // takes a post out of the pool and its answer puts it back with the new tag, so every
  // If-Match is current and no two connections edit the same post at once.
  const pools = new Map<string, { free: Array<{ id: number, tag: string }>, out: Set<number>, next: number }>()
  const refill = async (server: Server, ids: number[]) => {
    const pool = pools.get(server.name)!
    for (const id of ids) {
      const res = await fetch(`${server.url}/v1/posts/${id}`)
      if (res.status !== 200) throw new Error(`${server.name}: GET /v1/posts/${id} answered ${res.status}`)
      pool.free.push({ id, tag: res.headers.get('etag')! })
      pool.out.delete(id)
    }
  }
  const authorOf = new Map(data.editable.map((p) => [p.id, p.authorId]))
  // Separate posts per server: the two share one database.
  const half = Math.floor(data.editable.length / 2)
  let edit = 0

  return [
    { key: 'post-by-id', name: 'GET /v1/posts/{id}', kind: 'read', load: async () => [{ method: 'GET', setupRequest: (r) => ({ ...r, path: `/v1/posts/${random(readable)}` }) }] },
    { key: 'list', name: 'GET /v1/posts?limit=20', kind: 'read', load: async () => [{ method: 'GET', path: '/v1/posts?limit=20' }] },
    { key: 'deep', name: 'GET /v1/posts?limit=20&cursor=(90%)', kind: 'page', load: async () => [{ method: 'GET', path: `/v1/posts?limit=20&cursor=${data.deepCursor}` }] },
    { key: 'product-by-id', name: 'GET /v1/products/{id}', kind: 'read', load: async () => [{ method: 'GET', setupRequest: (r) => ({ ...r, path: `/v1/products/${random(data.productIds)}` }) }] },
    { key: 'views', name: 'POST /v1/posts/{id}/views', kind: 'write', load: async () => [{ method: 'POST', setupRequest: (r) => ({ ...r, path: `/v1/posts/${random(readable)}/views` }) }] },
    {
      key: 'create-post',
      name: 'POST /v1/posts',
      kind: 'write',
      load: async () => [{ method: 'POST', path: '/v1/posts', headers: { ...json, authorization: `Bearer ${writer.token}` }, body: JSON.stringify({ title: 'A post from the bench', content: 'Written by autocannon, to measure the insert path.' }) }]
    },
    {
      key: 'patch-post',
      name: 'PATCH /v1/posts/{id} (If-Match)',
      kind: 'write',
      load: async (server) => {
        if (!pools.has(server.name)) {
          pools.set(server.name, { free: [], out: new Set(), next: 0 })
          const offset = server.name === 'service' ? 0 : half
          await refill(server, data.editable.slice(offset, offset + Math.min(half, CONNECTIONS * 2)).map((p) => p.id))
        }
        const pool = pools.get(server.name)!
        return [{
          method: 'PATCH',
          setupRequest: (r) => {
            const post = pool.free.shift()
            if (post === undefined) throw new Error('the PATCH pool ran dry')
            pool.out.add(post.id)
            edit += 1
            return {
              ...r,
              path: `/v1/posts/${post.id}`,
              headers: { ...json, authorization: `Bearer ${tokenOf.get(authorOf.get(post.id)!)!}`, 'if-match': post.tag },
              body: JSON.stringify({ title: `Edited ${edit}` })
            }
          },
          onResponse: (status, body, _context, headers) => {
            if (status !== 200) return
            const id = (JSON.parse(body) as { id: number }).id
            pool.out.delete(id)
            pool.free.push({ id, tag: headers.etag ?? headers.ETag! })
          }
        }]
      },
      // A request cut off at the end of a run may or may not have been applied: ask for the tags.
      after: async (server) => { await refill(server, [...pools.get(server.name)!.out]) }
    },
    {
      key: 'order',
      name: 'POST /v1/orders',
      kind: 'write',
      load: async () => [{
        method: 'POST',
        path: '/v1/orders',
        headers: { ...json, authorization: `Bearer ${buyer.token}` },
        setupRequest: (r) => ({ ...r, body: JSON.stringify({ productId: random(data.productIds), quantity: 1 }) })
      }]
    }
  ]
}

function loadFor (requests: autocannon.Request[], connections = CONNECTIONS, seconds = SECONDS): Load {
  return SMOKE ? { connections, seconds, amount: SMOKE_AMOUNT, requests } : { connections, seconds, requests }
}

/** Requests the service answered, over the whole run. */
let answered = 0
async function runOnce (route: Route, server: Server, seconds = SECONDS): Promise<Measured> {
  const result = await measure(server.url, loadFor(await route.load(server), CONNECTIONS, seconds))
  if (server.name === 'service') answered += result.total
  await route.after?.(server)
  if (result.bad > 0) problems.push(`${server.name}, ${route.name}: ${result.badDetail}`)
  return result
}

async function runRoute (route: Route, service: Server, floor: Server): Promise<Row> {
  if (!SMOKE) {
    await runOnce(route, service, 2)
    await runOnce(route, floor, 2)
  }
  service.resetPeak()
  const row: Row = { route, service: [], floor: [], ratios: [], rss: 0 }
  for (let round = 0; round < ROUNDS; round++) {
    const s = await runOnce(route, service)
    row.rss = Math.max(row.rss, service.peakRss())
    const f = await runOnce(route, floor)
    row.service.push(s)
    row.floor.push(f)
    row.ratios.push(s.rps / f.rps)
  }
  return row
}

interface Burst { logins: number, lagP50: number, lagP99: number, quietP99: number, seconds: number }

/**
 * 32 log-ins at once (each an Argon2id verification on the thread pool), with a stream of GETs
 * beside them. The event-loop lag is read from the client's side: the GETs' latency while the
 * log-ins run, against the same stream alone.
 */
async function loginBurst (service: Server, data: Seeded): Promise<Burst> {
  const seconds = SMOKE ? 1 : SECONDS
  const reads = (): Load => ({ connections: 4, seconds, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: `/v1/posts/${random(data.postIds)}` }) }] })
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

function printTable (database: string, rows: Row[], burst: Burst | undefined, highWater: number): void {
  console.log(`\n### ${database}\n`)
  console.log('| route | service req/s | floor req/s | ratio | service p50 / p99 ms | floor p50 / p99 ms | service peak RSS MiB |')
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const r of rows) {
    const s = (k: 'rps' | 'p50' | 'p99', list: Measured[]) => median(list.map((m) => m[k]))
    console.log(`| ${r.route.name} | ${fmt(s('rps', r.service))} | ${fmt(s('rps', r.floor))} | ${median(r.ratios).toFixed(2)} | ` +
      `${s('p50', r.service)} / ${s('p99', r.service)} | ${s('p50', r.floor)} / ${s('p99', r.floor)} | ${fmt(r.rss)} |`)
  }
  if (burst !== undefined) {
    console.log(`\nLog-in burst (service only, ${burst.seconds.toFixed(1)} s): ${fmt(burst.logins, 1)} log-ins/s with 32 in flight; ` +
      `a stream of GETs beside it (4 connections): p50 ${burst.lagP50} ms, p99 ${burst.lagP99} ms (the same stream alone: p99 ${burst.quietP99} ms). ` +
      'Event-loop lag is read as that GET latency, seen by the client (an upper bound: it includes each GET\'s own work).')
  }
  console.log(`Service peak resident memory over the whole run (VmHWM): ${fmt(highWater)} MiB`)
}

function verdicts (database: string, rows: Row[], burst: Burst | undefined, highWater: number): string[] {
  const lines: string[] = []
  const check = (name: string, ok: boolean, detail: string) => lines.push(`${ok ? 'PASS' : 'FAIL'}  ${database}: ${name} (${detail})`)
  const readGoal = database === 'PostgreSQL' ? 0.80 : 0.85
  for (const r of rows) {
    const ratio = median(r.ratios)
    if (r.route.kind === 'read') check(`${r.route.name} ≥ ${readGoal.toFixed(2)}× floor`, ratio >= readGoal, `${ratio.toFixed(3)}×`)
    if (r.route.kind === 'write') {
      if (database === 'PostgreSQL') lines.push(`info  ${database}: ${r.route.name} ${ratio.toFixed(2)}× floor (no goal set on PostgreSQL)`)
      else check(`${r.route.name} ≥ 0.70× floor`, ratio >= 0.70, `${ratio.toFixed(3)}×`)
    }
  }
  const first = rows.find((r) => r.route.key === 'list')
  const deep = rows.find((r) => r.route.key === 'deep')
  if (first !== undefined && deep !== undefined) {
    // Per round: how much slower the deep page is than the first, in the service.
    const slowdown = median(first.service.map((m, i) => m.rps / deep.service[i]!.rps))
    check('deep page within 1.1× of the first', slowdown <= 1.1, `${slowdown.toFixed(2)}× the first page's time`)
  }
  if (burst !== undefined) check('event-loop lag p99 during the log-in burst < 20 ms', burst.lagP99 < 20, `${burst.lagP99} ms, client-side GET latency`)
  check('service peak RSS < 150 MiB', highWater < 150, `${fmt(highWater)} MiB`)
  return lines
}

async function benchDatabase (label: string, postgresAdminUrl: string | undefined, work: string): Promise<string[]> {
  const scratch = await scratchDatabase('bench', postgresAdminUrl)
  try {
    const started = Date.now()
    const data = await seed(scratch.url, SIZE)
    console.log(`${label}: seeded ${fmt(SIZE.users)} users (one session each), ${fmt(SIZE.posts)} posts, ${fmt(SIZE.products)} products, ${fmt(SIZE.orders)} orders in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    const serviceLog = join(work, `service-${label}.log`)
    const service = await startService([...(CPU_PROF !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${resolve(CPU_PROF)}`] : []), ...SERVICE_ENTRY], scratch.url, serviceLog)
    const floor = await startFloor(scratch.url, join(work, `floor-${label}.log`))
    const answeredBefore = answered
    try {
      const rows: Row[] = []
      for (const route of routes(data).filter((r) => ONLY === undefined || ONLY.includes(r.key))) {
        process.stderr.write(`${label}: ${route.name}\n`)
        rows.push(await runRoute(route, service, floor))
      }
      const burst = ONLY === undefined || ONLY.includes('login') ? await loginBurst(service, data) : undefined
      const highWater = service.highWater()
      printTable(label, rows, burst, highWater)
      const logLines = readFileSync(serviceLog, 'utf8').split('\n').filter((l) => l.includes('"reqId"')).length
      console.log(`Service log: ${fmt(logLines)} lines naming a request id, at info, written to a file, for ${fmt(answered - answeredBefore)} requests answered.`)
      return SMOKE ? [] : verdicts(label, rows, burst, highWater)
    } finally {
      await service.stop()
      await floor.stop()
    }
  } finally {
    await scratch.drop()
  }
}

pinLoadGenerator()
console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${fmt(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}; ` +
  (PINNED ? 'service and floor pinned to core 0, load generator to core 1 (taskset).' : 'no pinning (taskset or a second core missing).'))
console.log(`Runs: ${SMOKE ? `smoke, ${SMOKE_AMOUNT} requests per route and server` : `warm-up 2 s each, then ${ROUNDS} rounds × ${SECONDS} s per route, service and floor alternating`}, ${CONNECTIONS} connections.`)
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
for (const problem of problems) console.error(`ERROR ${problem}`)
process.exit(problems.length > 0 || catalogueFailed || results.some((l) => l.startsWith('FAIL')) ? 1 : 0)
