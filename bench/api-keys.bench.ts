// What an API key costs over a log-in token: the same requests on one service process, once with
// a user's log-in token and once with that user's API key, in alternating rounds (so drift in
// machine load touches both alike): a read (GET /v1/orders/{id}) and a write (POST /v1/orders).
// The goal: the key within 3 % of the token (the median of the rounds' key/token ratios). Server
// and load generator each on their own core, as in `npm run bench`, whose last part this is.
//
//   npm run bench:keys                                   (SQLite, a fresh temporary file)
//   BENCH_DATABASE_URL=postgres://… npm run bench:keys   (also PostgreSQL, a fresh database)
//   npm run bench:keys -- --smoke                        (100 requests a run, one round: it works; no goal)
//   BENCH_SECONDS=5 BENCH_ROUNDS=7 BENCH_CONNECTIONS=32   per-run length, rounds, connections
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type autocannon from 'autocannon'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import { buildService, measure, median, pinLoadGenerator, PINNED, startService } from './load.js'

const SMOKE = process.argv.includes('--smoke')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = SMOKE ? 1 : Math.max(3, Number(process.env.BENCH_ROUNDS ?? 7))
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const GOAL = 0.97
const json = { 'content-type': 'application/json' }

async function benchOn (label: string, postgresUrl: string | undefined, dir: string): Promise<boolean> {
  const database = await scratchDatabase('bench-keys', postgresUrl)
  // The service makes this administrator at start-up: the product the orders are for is theirs.
  process.env.ADMIN_EMAIL = 'admin@bench.example'
  process.env.ADMIN_PASSWORD = 'bench admin password'
  const server = await startService(serviceArguments(), database.url, join(dir, `service-${label}.log`))
  let pass = true
  try {
    const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<any> => {
      const res = await fetch(`${server.url}${path}`, { method, headers: { ...json, ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
      return await res.json()
    }
    const login = async (email: string, password: string): Promise<Record<string, string>> =>
      ({ authorization: `Bearer ${(await call('POST', '/v1/sessions', {}, { email, password })).token as string}` })
    const admin = await login('admin@bench.example', 'bench admin password')
    const productId = (await call('POST', '/v1/products', admin, { name: 'Bench lamp', price: 100, category: 'HOME', stock: 1_000_000 })).id as number
    await call('POST', '/v1/users', {}, { email: 'buyer@bench.example', name: 'Buyer', password: 'bench password 1' })
    const asToken = await login('buyer@bench.example', 'bench password 1')
    const asKey = { authorization: `Bearer ${(await call('POST', '/v1/api-keys', asToken, { name: 'bench', scopes: ['orders:read', 'orders:write'] })).key as string}` }
    const order = (await call('POST', '/v1/orders', asToken, { productId, quantity: 1 })).id as number
    const scenarios: Array<{ name: string, requests: (auth: Record<string, string>) => autocannon.Request[] }> = [
      { name: 'GET /v1/orders/{id}', requests: (auth) => [{ method: 'GET', path: `/v1/orders/${order}`, headers: auth }] },
      { name: 'POST /v1/orders', requests: (auth) => [{ method: 'POST', path: '/v1/orders', headers: { ...json, ...auth }, body: JSON.stringify({ productId, quantity: 1 }) }] }
    ]
    for (const scenario of scenarios) {
      const ratios: number[] = []
      const tokenRps: number[] = []
      const keyRps: number[] = []
      let generator = 0
      for (let round = 0; round < ROUNDS; round++) {
        const run = async (auth: Record<string, string>) => {
          const measured = await measure(server.url, { connections: CONNECTIONS, seconds: SECONDS, requests: scenario.requests(auth), ...(SMOKE ? { amount: 100 } : {}) })
          if (measured.bad > 0) throw new Error(`${label}, ${scenario.name}: ${measured.badDetail}`)
          generator = Math.max(generator, measured.generatorCpu)
          return measured.rps
        }
        // Which goes first alternates.
        let withToken: number
        let withKey: number
        if (round % 2 === 0) {
          withToken = await run(asToken)
          withKey = await run(asKey)
        } else {
          withKey = await run(asKey)
          withToken = await run(asToken)
        }
        tokenRps.push(withToken)
        keyRps.push(withKey)
        ratios.push(withKey / withToken)
      }
      const ratio = median(ratios)
      const verdict = SMOKE ? 'smoke: no goal' : ratio >= GOAL ? 'PASS' : 'FAIL'
      if (verdict === 'FAIL') pass = false
      console.log(`${label} ${scenario.name}: token ${median(tokenRps).toFixed(0)} req/s, key ${median(keyRps).toFixed(0)} req/s, key/token ${ratio.toFixed(3)} ` +
        `(rounds ${ratios.map((r) => r.toFixed(3)).join(' ')}); goal ≥ ${GOAL}: ${verdict}; generator peak ${(generator * 100).toFixed(0)} % of its core`)
    }
  } finally {
    await server.stop()
    await database.drop()
  }
  return pass
}

const dir = mkdtempSync(join(tmpdir(), 'bench-keys-'))
try {
  buildService()
  pinLoadGenerator()
  console.log(`API key against log-in token: ${ROUNDS} alternating round(s) of ${SMOKE ? '100 requests' : `${SECONDS} s`}, ${CONNECTIONS} connections, ${PINNED ? 'server and generator pinned to their own cores' : 'not pinned (one core)'}`)
  let pass = await benchOn('SQLite', undefined, dir)
  const pgUrl = process.env.BENCH_DATABASE_URL
  if (pgUrl !== undefined && pgUrl !== '') pass = await benchOn('PostgreSQL', pgUrl, dir) && pass
  process.exitCode = pass ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
