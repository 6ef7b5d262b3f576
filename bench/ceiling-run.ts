// `npm run bench:ceiling`: how close to the floor this stack can come on a read, feature by feature.
//
// Seeds a SQLite database as `npm run bench` does, starts the floor (bench/floor.ts: the
// statement, JSON.stringify and nothing else), then a ladder of servers one after the other:
// bare Fastify on the floor's statements with the service's representations (bench/ceiling.ts),
// the same with the service's per-request features added one at a time, every feature on
// node:http without Fastify (bench/ceiling-http.ts: the ceiling of the service's fast reads,
// src/pipeline/fast-reads.ts), and last the service itself (dist/server.js as `npm start` runs it). Each is measured against the
// floor on GET /v1/posts/{id} and GET /v1/products/{id}: a warm-up, then rounds alternating
// server and floor; the ratio is the median of the per-round ratios, as in `npm run bench`, and
// as there the load comes from wrk when it is on the PATH (autocannon could not keep up with the
// floor), from autocannon otherwise and in the smoke run.
// Every server runs with the Node.js flags of `npm start`. A ratio against the floor says what
// a rung costs; two rungs are compared through the floor, which runs throughout.
//
//   npm run bench:ceiling                            3 rounds of 5 s per route and rung
//   npm run bench:ceiling -- --smoke                 little data, 100 requests per route and server,
//                                                    the service from source: checks that it runs (CI)
//   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=32
//   CEILING_RUNGS=1,2                                some rungs only (1 is bare Fastify, 8 every feature on it, 9 every
//                                                    feature on node:http, 10 the service), e.g. to
//                                                    measure one feature's price over more rounds
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import type { FEATURES } from './ceiling.js'
import { freePort } from '../scripts/free-port.mjs'
import { buildService, measure, measureWrk, median, pinLoadGenerator, readRequests, PINNED, startFloor, startServer, startService, WRK, type Read as WrkRead, type Server } from './load.js'
import { FULL_SIZE, seed, SMOKE_SIZE } from './seed.js'

const SMOKE = process.argv.includes('--smoke')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = SMOKE ? 1 : Math.max(3, Number(process.env.BENCH_ROUNDS ?? 3))
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const root = resolve(import.meta.dirname, '..')

// The ladder, bottom up: bare Fastify, then one feature more per rung (each rung has every
// feature of the rungs below it).
const STEPS: Array<{ label: string, adds?: typeof FEATURES[number] }> = [
  { label: 'bare Fastify on the floor\'s statements, the service\'s representation, `JSON.stringify`' },
  { label: '+ one log line per request at info (the service\'s logger and log controller)', adds: 'log' },
  { label: '+ request id (`X-Request-Id`) and the service\'s time limits', adds: 'id' },
  { label: '+ compiled serializer, ETag (SHA-1 of the body) and 304', adds: 'tag' },
  { label: '+ request metrics (counter and duration histogram)', adds: 'metrics' },
  { label: '+ rate limit (counting, two headers)', adds: 'limit' },
  { label: '+ the path id validated by a route schema', adds: 'validate' },
  { label: '+ `X-Content-Type-Options` (every feature above, on Fastify)', adds: 'nosniff' }
]
const fmt = (n: number) => Math.round(n).toLocaleString('en')
/** The service should keep this much of what the same features cost on bare Fastify. */
const CEILING_GOAL = 0.95

/** A read: wrk drives it in a full run with wrk on the PATH, as in `npm run bench`; autocannon otherwise. */
interface Read { name: string, read: WrkRead }

async function compare (server: Server, floor: Server, read: Read): Promise<{ rps: number, floorRps: number, ratio: number }> {
  const run = async (target: Server, seconds: number) => {
    const result = WRK && !SMOKE
      ? await measureWrk(target.url, read.read, CONNECTIONS, seconds)
      : await measure(target.url, { connections: CONNECTIONS, seconds, requests: readRequests(read.read), ...(SMOKE ? { amount: 100 } : {}) })
    if (result.bad > 0) throw new Error(`${target.name}, ${read.name}: ${result.badDetail}`)
    return result.rps
  }
  if (!SMOKE) {
    await run(server, 2)
    await run(floor, 2)
  }
  const mine: number[] = []
  const floors: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    mine.push(await run(server, SECONDS))
    floors.push(await run(floor, SECONDS))
  }
  return { rps: median(mine), floorRps: median(floors), ratio: median(mine.map((rps, i) => rps / floors[i]!)) }
}

pinLoadGenerator()
console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, node ${process.version}; ` +
  (PINNED ? 'servers pinned to core 0, load generator to core 1 (taskset).' : 'no pinning (taskset or a second core missing).'))
console.log(SMOKE
  ? `Runs: smoke, 100 requests per route and server, ${CONNECTIONS} connections; no ratio means anything here.`
  : `Runs: warm-up 2 s each, then ${ROUNDS} rounds × ${SECONDS} s per route and rung, server and floor alternating, ${CONNECTIONS} connections, ` +
    (WRK ? 'driven by wrk (one thread).' : 'driven by autocannon in this process (wrk is not on the PATH: the floor\'s figures may be generator-bound; `apt-get install wrk`).'))
// As in `npm run bench`: the full run measures the built service, the smoke run (CI, which
// type-checks the same code) starts it from source.
if (!SMOKE) buildService()
const serviceArgs = serviceArguments({ fromSource: SMOKE })
// `npm start`'s Node.js flags: its arguments without the entry point.
const nodeFlags = serviceArguments().slice(0, -1)

const work = mkdtempSync(join(tmpdir(), 'ceiling-'))
const scratch = await scratchDatabase('ceiling')
try {
  const data = await seed(scratch.url, SMOKE ? SMOKE_SIZE : FULL_SIZE)
  const reads: Read[] = [
    { name: 'GET /v1/posts/{id}', read: { prefix: '/v1/posts/', ids: data.postIds } },
    { name: 'GET /v1/products/{id}', read: { prefix: '/v1/products/', ids: data.productIds } }
  ]
  const floor = await startFloor(scratch.url, join(work, 'floor.log'))
  try {
    console.log(`\n| server | ${reads.map((r) => `${r.name}: req/s (floor) | ratio`).join(' | ')} |`)
    console.log(`|---|${reads.map(() => '---:|---:').join('|')}|`)
    const rungs: Array<{ label: string, start: () => Promise<Server> }> = [
      ...STEPS.map(({ label }, i) => ({
        label,
        start: async () => {
          const port = await freePort()
          const features = STEPS.slice(0, i + 1).flatMap((step) => step.adds ?? [])
          return await startServer(`rung ${i + 1}`, [...nodeFlags, '--import', 'tsx', join(root, 'bench/ceiling.ts')],
            { CEILING_DATABASE_URL: scratch.url, CEILING_FEATURES: features.join(','), CEILING_PORT: String(port) }, join(work, `rung-${i + 1}.log`), port)
        }
      })),
      {
        label: 'every feature above on node:http, without Fastify (what the service\'s fast reads can reach)',
        start: async () => {
          const port = await freePort()
          return await startServer(`rung ${STEPS.length + 1}`, [...nodeFlags, '--import', 'tsx', join(root, 'bench/ceiling-http.ts')],
            { CEILING_DATABASE_URL: scratch.url, CEILING_PORT: String(port) }, join(work, 'rung-http.log'), port)
        }
      },
      { label: 'the service (`npm start`, every feature, its own structure)', start: async () => await startService(serviceArgs, scratch.url, join(work, 'service.log')) }
    ]
    const only = process.env.CEILING_RUNGS?.split(',').map(Number)
    // Each rung's ratios to the floor, by read: the service's against the ceiling's (the last rung before it) is the goal.
    const ratios = new Map<number, number[]>()
    for (const [i, rung] of rungs.entries()) {
      if (only !== undefined && !only.includes(i + 1)) continue
      process.stderr.write(`${rung.label}\n`)
      const server = await rung.start()
      try {
        const cells: string[] = []
        const mine: number[] = []
        for (const read of reads) {
          const { rps, floorRps, ratio } = await compare(server, floor, read)
          cells.push(`${fmt(rps)} (${fmt(floorRps)}) | ${ratio.toFixed(2)}`)
          mine.push(ratio)
        }
        ratios.set(i, mine)
        console.log(`| ${rung.label} | ${cells.join(' | ')} |`)
      } finally {
        await server.stop()
      }
    }
    const ceiling = ratios.get(rungs.length - 2)
    const service = ratios.get(rungs.length - 1)
    if (ceiling !== undefined && service !== undefined && !SMOKE) {
      console.log('')
      for (const [k, read] of reads.entries()) {
        const share = service[k]! / ceiling[k]!
        console.log(`${share >= CEILING_GOAL ? 'PASS' : 'FAIL'}  ${read.name}: the service at ${share.toFixed(2)} of its ceiling (goal ${CEILING_GOAL}; each a ratio to the floor over the same rounds)`)
      }
    }
  } finally {
    await floor.stop()
  }
} finally {
  await scratch.drop()
  rmSync(work, { recursive: true, force: true })
}
