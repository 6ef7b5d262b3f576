// This checkout's service against another revision's, on the same database, in alternating
// rounds (`npm run bench:ab -- --base=REV`), with an A/A beside it (a second process of this
// checkout's service) and the floor (bench/floor.ts), over which each service's own cost is read.
// A change too small for the A/A spread cannot be told from noise; one larger than it can. For
// what a change to the request path does to the reads, which a run of `npm run bench` on a shared
// machine cannot resolve (its floor moves by a third between runs).
//
//   npm run bench:ab -- --base=HEAD~3                    GET a post, a product, the list
//   npm run bench:ab -- --base=main --only=post-by-id    one read
//   BENCH_SECONDS=3 BENCH_ROUNDS=8 BENCH_CONNECTIONS=32  per-run length, rounds (a multiple of 4), connections
//
// REV is checked out into a temporary worktree (this repository's node_modules linked in) and
// built there; both services run as `npm start` runs them (this checkout's start flags), the
// floor as `npm run bench` runs it, all pinned to core 0, wrk on core 1. Each round measures the
// four in one of the orders of a balanced Latin square (BALANCED_ORDERS), in turn: over four
// rounds each server runs once in each place and right after each other server once. (Rotating
// one order, as this did first, keeps every server behind the same one: the copy always ran
// right after this checkout, and the A/A read +3 to +5 µs a request with no change at all.)
// Every square runs on new processes of the four, started and warmed for 2 s in the square's own
// order: one process of a build can cost 5 µs a request more or less than another of the same
// build for its whole life (the base's own cost read +29.9 in one run and +37.3 in the next, with
// no change), so a comparison of one process against another measured luck, which a run's
// squares average; started always in one order, the A/A read −2 to −3 µs.
//
// The comparison is by CPU time per answered request: each server process's user and system time
// (every thread of it), read from /proc/<pid>/stat just before and after each run and divided by
// the requests it answered (bench/load.ts, withServerCpu), and by own cost: a service's CPU time
// per request less the floor's in the same round. Per read, a table of each server's req/s, user,
// system and total µs per request and own cost (the median of the rounds, least–greatest), then
// the differences this − base and, for the A/A, copy − this, taken round by round: req/s as a
// ratio, user and total µs per request as differences (the floor is the same for both sides of a
// round, so the total's difference is the own cost's too), and the own cost as a ratio, each the
// median with the least and the greatest. Rounds of 3 s at 10,000 reads a second make a clock
// tick (10 ms) 0.33 µs a request, under 1 % of a service's figure; the line under each table
// gives the coarsest tick of the run (a difference is known to about twice that). Last, each
// server's peak resident memory.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import { buildService, clockTicksPerSecond, measureWrk, median, pinLoadGenerator, PINNED, startFloor, startService, withServerCpu, WRK, type Costed, type Read, type Server } from './load.js'
import { FULL_SIZE, seed } from './seed.js'

const ROOT = resolve(import.meta.dirname, '..')
/**
 * The order of the four servers (0 base, 1 this, 2 copy, 3 floor) in each round, in turn: a
 * Williams square, in which every server is in every place once and follows every other once.
 */
const BALANCED_ORDERS = [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]] as const
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
// Whole squares only (see BALANCED_ORDERS): a number of rounds is rounded up to a multiple of 4.
const ROUNDS = Math.max(4, Math.ceil(Number(process.env.BENCH_ROUNDS ?? 8) / 4) * 4)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const base = process.argv.find((a) => a.startsWith('--base='))?.slice('--base='.length)
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',')
if (base === undefined || base === '') throw new Error('usage: npm run bench:ab -- --base=REV [--only=post-by-id,product-by-id,list]')
if (!WRK) throw new Error('bench:ab needs wrk (apt-get install wrk)')

const git = (args: string[], cwd = ROOT): void => {
  const run = spawnSync('git', args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] })
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed`)
}
const pct = (ratio: number): string => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)} %`
const fmt = (n: number, digits = 1): string => n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits })
/** A difference in µs, its sign always written. */
const signed = (n: number): string => `${n > 0 ? '+' : ''}${fmt(n)}`
/** The median of the rounds' figures, then their least and greatest. */
const spread = (values: number[], figure: (n: number) => string, to = '–'): string =>
  `${figure(median(values))} (${figure(Math.min(...values))}${to}${figure(Math.max(...values))})`

pinLoadGenerator()
console.log(`${PINNED ? 'services and floor pinned to core 0, wrk to core 1' : 'no pinning'}; ${ROUNDS} rounds × ${SECONDS} s per read and server, ${CONNECTIONS} connections`)
const work = mkdtempSync(join(tmpdir(), 'bench-ab-'))
const tree = join(work, 'base')
git(['worktree', 'add', '--detach', '--quiet', tree, base])
const servers: Server[] = []
const scratch = await scratchDatabase('bench-ab')
// The base runs on a database of its own, migrated and seeded by its own code (bench/seed.ts in
// its tree, with the same sizes): a revision from before a migration refuses a database that
// holds migrations it does not know. The seed is deterministic, so both hold the same rows under
// the same ids; a read the base could not answer would end the run (a non-2xx is refused below).
const baseScratch = await scratchDatabase('bench-ab-base')
try {
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  const built = spawnSync('npm', ['run', 'build'], { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] })
  if (built.status !== 0) throw new Error(`npm run build failed in ${base}`)
  buildService()
  const data = await seed(scratch.url, FULL_SIZE)
  const baseSeed = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e',
    `const { seed, FULL_SIZE } = await import('./bench/seed.ts'); await seed(${JSON.stringify(baseScratch.url)}, FULL_SIZE)`],
  { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] })
  if (baseSeed.status !== 0) throw new Error(`seeding with ${base}'s own code failed`)
  const args = serviceArguments()
  const baseArgs = [...args.slice(0, -1), join(tree, 'dist/server.js')]
  const starts: Array<() => Promise<Server>> = [
    async () => await startService(baseArgs, baseScratch.url, join(work, 'base.log'), `base (${base})`),
    async () => await startService(args, scratch.url, join(work, 'this.log'), 'this checkout'),
    async () => await startService(args, scratch.url, join(work, 'copy.log'), 'this checkout, again (A/A)'),
    async () => await startFloor(scratch.url, join(work, 'floor.log'))
  ]
  /** Each server's peak resident memory over the processes it has had, MiB. */
  const peaks = starts.map(() => 0)
  /**
   * The four servers anew, started in `order` (each square starts them in another, as it runs
   * them: one always started first or last would be so in every square): the processes so far
   * stopped (their peaks kept), new ones started.
   */
  const restart = async (order: readonly number[]): Promise<void> => {
    for (const [i, server] of servers.entries()) {
      peaks[i] = Math.max(peaks[i]!, server.highWater())
      await server.stop()
    }
    for (const i of order) servers[i] = await starts[i]!()
  }
  await restart(BALANCED_ORDERS[0])
  const names = servers.map((server) => server.name)
  /** Whether the processes have measured nothing yet (no restart needed before the next square). */
  let fresh = true
  /** Squares run so far, over every read: the next one's order of starting. */
  let squares = 0
  const reads: Array<{ key: string, name: string, read: Read }> = [
    { key: 'post-by-id', name: 'GET /v1/posts/{id}', read: { prefix: '/v1/posts/', ids: data.postIds } },
    { key: 'product-by-id', name: 'GET /v1/products/{id}', read: { prefix: '/v1/products/', ids: data.productIds } },
    { key: 'list', name: 'GET /v1/posts?limit=20', read: { path: '/v1/posts?limit=20' } }
  ].filter((r) => only === undefined || only.includes(r.key))
  for (const { name, read } of reads) {
    const run = async (server: Server, seconds: number): Promise<Costed> => {
      const result = await withServerCpu(server, async () => await measureWrk(server.url, read, CONNECTIONS, seconds))
      if (result.bad > 0) throw new Error(`${server.name}, ${name}: ${result.badDetail}`)
      return result
    }
    const runs = servers.map(() => [] as Costed[])
    for (let round = 0; round < ROUNDS; round++) {
      if (round % BALANCED_ORDERS.length === 0) {
        const order = BALANCED_ORDERS[squares++ % BALANCED_ORDERS.length]!
        if (!fresh) await restart(order)
        fresh = false
        for (const i of order) await run(servers[i]!, 2)
      }
      for (const i of BALANCED_ORDERS[round % BALANCED_ORDERS.length]!) runs[i]!.push(await run(servers[i]!, SECONDS))
    }
    const [b, a, c, f] = runs as [Costed[], Costed[], Costed[], Costed[]]
    /** Per round: a side's CPU time per request less the floor's, µs. */
    const own = (side: Costed[]) => side.map((m, i) => m.cpu.total - f[i]!.cpu.total)
    console.log(`\n### ${name}\n`)
    console.log('| server | req/s | user µs/req | system µs/req | total µs/req | own cost µs/req | own / floor |')
    console.log('|---|---:|---:|---:|---:|---:|---:|')
    for (const [label, side] of [[names[0], b], [names[1], a], [names[2], c], [names[3], f]] as const) {
      const cpu = (part: 'user' | 'system' | 'total') => spread(side.map((m) => m.cpu[part]), fmt)
      const mine = side === f ? undefined : own(side)
      console.log(`| ${label} | ${fmt(median(side.map((m) => m.rps)), 0)} | ${cpu('user')} | ${cpu('system')} | ${cpu('total')} | ` +
        `${mine === undefined ? '' : spread(mine, signed, ' … ')} | ${mine === undefined ? '' : spread(mine.map((x, i) => 1 + x / f[i]!.cpu.total), pct, ' … ')} |`)
    }
    // Round by round: `x` against `y` (this against base, the copy against this).
    const differences = (label: string, x: Costed[], y: Costed[]) => {
      const less = (part: 'user' | 'total') => spread(x.map((m, i) => m.cpu[part] - y[i]!.cpu[part]), signed, ' … ')
      const [ownX, ownY] = [own(x), own(y)]
      console.log(`| ${label} | ${spread(x.map((m, i) => m.rps / y[i]!.rps), pct, ' … ')} | ${less('user')} | ${less('total')} | ${spread(ownX.map((o, i) => o / ownY[i]!), pct, ' … ')} |`)
    }
    console.log('\n| round by round | req/s, ratio | user µs/req, difference | total µs/req, difference (the own cost\'s too) | own cost, ratio |')
    console.log('|---|---:|---:|---:|---:|')
    differences(`**this − base**`, a, b)
    differences('A/A: copy − this', c, a)
    const tick = Math.max(...[b, a, c, f].flat().map((m) => m.cpu.tick))
    console.log(`\nA clock tick (1/${clockTicksPerSecond()} s) is at most ${tick.toFixed(2)} µs/req over a round's requests here: each server's user and system figure ` +
      `is known to about that, a difference between two of them to about twice that (${(2 * tick).toFixed(2)} µs/req).`)
  }
  console.log(`\nPeak resident memory (VmHWM), MiB, the greatest over each server's processes: ${servers.map((server, i) => `${server.name} ${fmt(Math.max(peaks[i]!, server.highWater()), 0)}`).join(', ')}`)
} finally {
  for (const server of servers) await server.stop()
  await scratch.drop()
  await baseScratch.drop()
  git(['worktree', 'remove', '--force', tree])
  rmSync(work, { recursive: true, force: true })
}
