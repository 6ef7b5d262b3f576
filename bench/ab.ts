// This checkout's service against another revision's, on the same database, in alternating
// rounds (`npm run bench:ab -- --base=REV`), with an A/A beside it: a second process of this
// checkout's service. A change too small for the A/A spread cannot be told from noise; one
// larger than it can. For what a change to the request path does to the reads, which a run of
// `npm run bench` on a shared machine cannot resolve (its floor moves by a third between runs).
//
//   npm run bench:ab -- --base=HEAD~3                    GET a post, a product, the list
//   npm run bench:ab -- --base=main --only=post-by-id    one read
//   BENCH_SECONDS=3 BENCH_ROUNDS=9 BENCH_CONNECTIONS=32  per-run length, rounds, connections
//
// REV is checked out into a temporary worktree (this repository's node_modules linked in) and
// built there; both services run as `npm start` runs them (this checkout's start flags), pinned
// to core 0, wrk on core 1. Each round measures the three in a rotated order; per round the
// ratios this/base and copy/this; the medians and ranges are printed.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import { buildService, measureWrk, median, pinLoadGenerator, PINNED, startService, WRK, type Read, type Server } from './load.js'
import { FULL_SIZE, seed } from './seed.js'

const ROOT = resolve(import.meta.dirname, '..')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const ROUNDS = Math.max(3, Number(process.env.BENCH_ROUNDS ?? 9))
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

pinLoadGenerator()
console.log(`${PINNED ? 'services pinned to core 0, wrk to core 1' : 'no pinning'}; ${ROUNDS} rounds × ${SECONDS} s per read and server, ${CONNECTIONS} connections`)
const work = mkdtempSync(join(tmpdir(), 'bench-ab-'))
const tree = join(work, 'base')
git(['worktree', 'add', '--detach', '--quiet', tree, base])
const servers: Server[] = []
const scratch = await scratchDatabase('bench-ab')
try {
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  const built = spawnSync('npm', ['run', 'build'], { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] })
  if (built.status !== 0) throw new Error(`npm run build failed in ${base}`)
  buildService()
  const data = await seed(scratch.url, FULL_SIZE)
  const args = serviceArguments()
  const baseArgs = [...args.slice(0, -1), join(tree, 'dist/server.js')]
  const [before, after, copy] = [
    await startService(baseArgs, scratch.url, join(work, 'base.log'), `base (${base})`),
    await startService(args, scratch.url, join(work, 'this.log'), 'this checkout'),
    await startService(args, scratch.url, join(work, 'copy.log'), 'this checkout, again (A/A)')
  ]
  servers.push(before, after, copy)
  const reads: Array<{ key: string, name: string, read: Read }> = [
    { key: 'post-by-id', name: 'GET /v1/posts/{id}', read: { prefix: '/v1/posts/', ids: data.postIds } },
    { key: 'product-by-id', name: 'GET /v1/products/{id}', read: { prefix: '/v1/products/', ids: data.productIds } },
    { key: 'list', name: 'GET /v1/posts?limit=20', read: { path: '/v1/posts?limit=20' } }
  ].filter((r) => only === undefined || only.includes(r.key))
  console.log('\n| read | base req/s | this req/s | this / base (median, range) | A/A: copy / this (median, range) |')
  console.log('|---|---:|---:|---:|---:|')
  for (const { name, read } of reads) {
    const rps = async (server: Server, seconds: number): Promise<number> => {
      const result = await measureWrk(server.url, read, CONNECTIONS, seconds)
      if (result.bad > 0) throw new Error(`${server.name}, ${name}: ${result.badDetail}`)
      return result.rps
    }
    for (const server of servers) await rps(server, 2)
    const runs = servers.map(() => [] as number[])
    for (let round = 0; round < ROUNDS; round++) {
      // Rotated, so that no server is always measured right after another.
      for (let k = 0; k < servers.length; k++) {
        const i = (round + k) % servers.length
        runs[i]!.push(await rps(servers[i]!, SECONDS))
      }
    }
    const [b, a, c] = runs as [number[], number[], number[]]
    const ab = a.map((x, i) => x / b[i]!)
    const aa = c.map((x, i) => x / a[i]!)
    const range = (r: number[]): string => `${pct(Math.min(...r))} … ${pct(Math.max(...r))}`
    console.log(`| ${name} | ${Math.round(median(b)).toLocaleString('en')} | ${Math.round(median(a)).toLocaleString('en')} | **${pct(median(ab))}** (${range(ab)}) | ${pct(median(aa))} (${range(aa)}) |`)
  }
} finally {
  for (const server of servers) await server.stop()
  await scratch.drop()
  git(['worktree', 'remove', '--force', tree])
  rmSync(work, { recursive: true, force: true })
}
