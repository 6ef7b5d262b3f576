// What signing in costs, three ways, against the service as `npm start` runs it (dist/server.js,
// production settings, logs at info to a file), pinned to core 0; this process (the requests,
// and the OpenID provider) on core 1:
//   - password: POST /v1/sessions {email, password} → 201;
//   - password and a second factor: the same → 401 MFA_REQUIRED, then {challenge, code} → 201;
//   - an identity provider: POST /v1/oidc-authorizations, the provider's log-in and consent
//     (panva's oidc-provider in this process, on loopback; timed apart: it is not the service's
//     work), then POST /v1/sessions {provider, code, state} → 201.
// Each kind: a warm-up, then SIGN_INS one at a time (the latency of a whole sign-in), then for the
// two password kinds IN_FLIGHT at a time (sign-ins per second: a password check is Argon2id on the
// thread pool, the limit). Every answer's status is checked; a wrong one stops the run.
// The accounts are seeded (bench/seed.ts: one password for all); the factors are enrolled and
// activated through the API, each account signing in once with the next step's code.
//
//   npm run bench:sign-in                                    SQLite (a fresh temporary file)
//   BENCH_DATABASE_URL=postgres://… npm run bench:sign-in    also PostgreSQL (a scratch database)
//   npm run bench:sign-in -- --smoke                         a few of each, from source, no figures to keep
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import * as OTPAuth from 'otpauth'
import { Pool } from 'undici'
import { freePort } from '../scripts/free-port.mjs'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import { startTestProvider, type TestProvider } from '../test/support/oidc-provider.js'
import { buildService, pinLoadGenerator, PINNED, startServer, type Server } from './load.js'
import { PASSWORD, seed } from './seed.js'

const SMOKE = process.argv.includes('--smoke')
const WARM_UP = SMOKE ? 3 : 20
const SIGN_INS = SMOKE ? 5 : 100
const IN_FLIGHT = 32
const CONCURRENT = SMOKE ? 8 : 256
const REDIRECT = 'https://app.example/signed-in'
const CLIENT = { clientId: 'bench', clientSecret: 'bench client secret', redirectUris: [REDIRECT] }

interface Account { id: number, email: string, token: string }
interface Factor { account: Account, totp: OTPAuth.TOTP, activatedStep: number }

const ms = (value: number) => `${value.toFixed(1)} ms`
function percentile (sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!
}
function summary (latencies: number[]): string {
  const sorted = [...latencies].sort((a, b) => a - b)
  return `p50 ${ms(percentile(sorted, 0.5))}, p99 ${ms(percentile(sorted, 0.99))}, max ${ms(sorted[sorted.length - 1]!)} (${sorted.length})`
}

async function call (pool: Pool, method: 'POST' | 'PUT', path: string, body: unknown, expected: number, token?: string): Promise<any> {
  const res = await pool.request({
    method,
    path,
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body)
  })
  const text = await res.body.text()
  if (res.statusCode !== expected) throw new Error(`${method} ${path}: expected ${expected}, got ${res.statusCode} ${text.slice(0, 300)}`)
  return text === '' ? undefined : JSON.parse(text)
}

const step = () => Math.floor(Date.now() / 1000 / 30)

/** A code the factor has not used: this step's, or the next one's while this step's was the activation's. */
function freshCode (factor: Factor): string {
  const at = Math.max(step(), factor.activatedStep + 1)
  return factor.totp.generate({ timestamp: at * 30_000 })
}

async function passwordSignIn (pool: Pool, account: Account): Promise<void> {
  await call(pool, 'POST', '/v1/sessions', { email: account.email, password: PASSWORD }, 201)
}

async function factorSignIn (pool: Pool, factor: Factor): Promise<void> {
  const asked = await call(pool, 'POST', '/v1/sessions', { email: factor.account.email, password: PASSWORD }, 401)
  await call(pool, 'POST', '/v1/sessions', { challenge: asked.challenge, code: freshCode(factor) }, 201)
}

/** The provider's sign-in; returns the service's part (its two requests) and the whole, in ms. */
async function providerSignIn (pool: Pool, provider: TestProvider, sub: string): Promise<{ service: number, whole: number }> {
  const started = performance.now()
  const begun = await call(pool, 'POST', '/v1/oidc-authorizations', { provider: 'local', redirectUri: REDIRECT }, 201)
  const begunAt = performance.now()
  const back = await provider.signIn(begun.authorizationUrl, sub)
  const backAt = performance.now()
  await call(pool, 'POST', '/v1/sessions', { provider: 'local', code: back.searchParams.get('code'), state: back.searchParams.get('state') }, 201)
  const done = performance.now()
  return { service: (begunAt - started) + (done - backAt), whole: done - started }
}

async function oneAtATime (count: number, signIn: (i: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = []
  for (let i = 0; i < count; i++) {
    const started = performance.now()
    await signIn(i)
    latencies.push(performance.now() - started)
  }
  return latencies
}

async function manyAtOnce (count: number, signIn: (i: number) => Promise<void>): Promise<{ perSecond: number, latencies: number[] }> {
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < count) {
      const i = next++
      const at = performance.now()
      await signIn(i)
      latencies.push(performance.now() - at)
    }
  }))
  return { perSecond: count / ((performance.now() - started) / 1000), latencies }
}

async function enrol (pool: Pool, account: Account): Promise<Factor> {
  const enrolled = await call(pool, 'POST', `/v1/users/${account.id}/totp`, undefined, 201, account.token)
  const totp = OTPAuth.URI.parse(enrolled.otpauthUri) as OTPAuth.TOTP
  const activatedStep = step()
  await call(pool, 'PUT', `/v1/users/${account.id}/totp`, { code: totp.generate({ timestamp: activatedStep * 30_000 }) }, 200, account.token)
  return { account, totp, activatedStep }
}

async function benchOn (label: string, postgresUrl: string | undefined, dir: string): Promise<void> {
  const database = await scratchDatabase('bench-sign-in', postgresUrl)
  const provider = await startTestProvider({ clients: [CLIENT] })
  let server: Server | undefined
  let pool: Pool | undefined
  try {
    const passwordUsers = WARM_UP + SIGN_INS
    const factorUsers = 2 * WARM_UP + SIGN_INS + CONCURRENT
    const seeded = await seed(database.url, { users: passwordUsers + factorUsers, posts: 2, products: 1, orders: 0 })
    const [port, metricsPort] = [await freePort(), await freePort()]
    server = await startServer('service', serviceArguments({ fromSource: SMOKE }), {
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      METRICS_PORT: String(metricsPort),
      RATE_LIMIT_PER_MINUTE: '0',
      SECRET_KEY: '3c'.repeat(32),
      OIDC_PROVIDERS: JSON.stringify([{ id: 'local', issuer: provider.issuer, ...CLIENT }])
    }, join(dir, `service-${label}.log`), port)
    pool = new Pool(server.url, { connections: IN_FLIGHT, pipelining: 1 })
    const accounts: Account[] = seeded.users
    const plain = accounts.slice(0, passwordUsers)

    // Password only: the same accounts sign in again and again.
    await oneAtATime(WARM_UP, async (i) => { await passwordSignIn(pool!, plain[i]!) })
    const password = await oneAtATime(SIGN_INS, async (i) => { await passwordSignIn(pool!, plain[i % plain.length]!) })
    const passwordMany = await manyAtOnce(CONCURRENT, async (i) => { await passwordSignIn(pool!, plain[i % plain.length]!) })

    // Password and a second factor: each factor signs in once (a code is good once), so the
    // factors are made just before they are used.
    const factors: Factor[] = []
    for (const account of accounts.slice(passwordUsers)) factors.push(await enrol(pool, account))
    await oneAtATime(WARM_UP, async (i) => { await factorSignIn(pool!, factors[i]!) })
    const withFactor = await oneAtATime(SIGN_INS, async (i) => { await factorSignIn(pool!, factors[WARM_UP + i]!) })
    const withFactorMany = await manyAtOnce(CONCURRENT, async (i) => { await factorSignIn(pool!, factors[WARM_UP + SIGN_INS + i]!) })

    // A provider: the first sign-in makes the account, the rest find it by its subject.
    provider.accounts.set('bench-person', { sub: 'bench-person', email: 'person@bench.example', email_verified: true, name: 'Person' })
    for (let i = 0; i < WARM_UP; i++) await providerSignIn(pool, provider, 'bench-person')
    const service: number[] = []
    const whole: number[] = []
    for (let i = 0; i < SIGN_INS; i++) {
      const timed = await providerSignIn(pool, provider, 'bench-person')
      service.push(timed.service)
      whole.push(timed.whole)
    }

    console.log(`${label}: password, one at a time: ${summary(password)}`)
    console.log(`${label}: password, ${IN_FLIGHT} in flight: ${passwordMany.perSecond.toFixed(1)} sign-ins/s, ${summary(passwordMany.latencies)}`)
    console.log(`${label}: password + second factor (two requests), one at a time: ${summary(withFactor)}`)
    console.log(`${label}: password + second factor, ${IN_FLIGHT} in flight: ${withFactorMany.perSecond.toFixed(1)} sign-ins/s, ${summary(withFactorMany.latencies)}`)
    console.log(`${label}: identity provider, one at a time: the service's two requests ${summary(service)}; the whole sign-in with the provider's pages ${summary(whole)}`)
    if (SMOKE) console.log(`${label}: smoke ok: every answer as expected`)
  } finally {
    await pool?.close()
    await server?.stop()
    await provider.close()
    await database.drop()
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-sign-in-'))
try {
  if (!SMOKE) buildService()
  pinLoadGenerator()
  console.log(`Sign-in: ${SIGN_INS} one at a time and ${CONCURRENT} at ${IN_FLIGHT} in flight per kind, ${SMOKE ? 'smoke (from source)' : 'dist/server.js'}; ` +
    `${PINNED ? 'service on core 0, requests and the OpenID provider on core 1 (taskset)' : 'not pinned (taskset or a second core missing)'}`)
  await benchOn('SQLite', undefined, dir)
  const pgUrl = process.env.BENCH_DATABASE_URL
  if (pgUrl !== undefined && pgUrl !== '') await benchOn('PostgreSQL', pgUrl, dir)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
