// A burst of password resets: 1,000 accounts each ask for a reset mail at once, as after a
// notice to every user. Measures the request (what each asker waits for: the address counted
// against the mail limits and the mail queued in the outbox) and the background sender (how
// long until the last of the 1,000 mails reached the SMTP server, and at what pace it sent).
//
// The service runs as a process, as in `npm run bench` (its Node.js flags, production settings,
// logs at info to a file, metrics on, pinned to core 0 when taskset and a second core exist),
// with the general rate limit off (RATE_LIMIT_PER_MINUTE=0), the per-address mail limits far
// above one mail per address, MAIL_POLL_MS as the environment leaves it (1 s by default), and
// SMTP_URL naming an SMTP server in this process on loopback (smtp-server: accepts every mail,
// no auth, no STARTTLS, notes when each arrives). The accounts are inserted straight into the
// database (bench/seed.ts), so none has a sign-up mail in the outbox before the burst. This
// process (the requests and the SMTP server) runs on core 1.
//
// First a warm-up of 200 requests on the same route for addresses without an account (their
// mails are skipped, none is sent), printed apart. Then the burst: one POST
// /v1/password-reset-tokens per account, each address once, 50 in flight (undici, one pool of
// 50 connections). Goals (PASS/FAIL; exits non-zero on a FAIL): every answer 202; every mail
// delivered within 60 s of the first request; request p99 < 50 ms. The burst, mail included,
// is given up 120 s after its first request (a FAIL, said as such).
//
//   npm run bench:reset-burst                                   SQLite (a fresh temporary file)
//   BENCH_DATABASE_URL=postgres://… npm run bench:reset-burst   also PostgreSQL (a scratch database)
//   npm run bench:reset-burst -- --smoke                        50 accounts (20 warm-up requests), from
//                                                               source: every answer 2xx and every
//                                                               mail in, no goals
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import SqliteDatabase from 'better-sqlite3'
import pg from 'pg'
import { SMTPServer } from 'smtp-server'
import { Pool } from 'undici'
import { freePort } from '../scripts/free-port.mjs'
import { serviceArguments } from '../scripts/start-command.mjs'
import { sqliteFile } from '../src/db/database.js'
import { scratchDatabase } from '../test/scratch-database.js'
import { buildService, pinLoadGenerator, PINNED, startServer } from './load.js'
import { seed } from './seed.js'

const SMOKE = process.argv.includes('--smoke')
const ACCOUNTS = SMOKE ? 50 : 1000
const IN_FLIGHT = 50
const GIVE_UP_MS = 120_000
/** Requests (for addresses without an account) before the burst, and how long they and their skipped mails may take. */
const WARM_UP = SMOKE ? 20 : 200
const WARM_UP_MS = 30_000
const MAIL_GOAL_MS = 60_000
const P99_GOAL_MS = 50
const SUBJECT = /^Subject: Reset your password\r?$/m

/** The SMTP server the service sends to: counts every mail and the moment it is in. */
interface Sink {
  url: string
  /** performance.now() as each mail's DATA ended, in order. */
  arrivals: number[]
  /** Envelope recipients seen, lower-cased. */
  recipients: Set<string>
  /** Mails whose subject is the reset mail's. */
  resets: () => number
  /** Resolves true once `count` mails are in, false at `deadline` (performance.now()). */
  waitFor: (count: number, deadline: number) => Promise<boolean>
  close: () => Promise<void>
}

async function startSink (): Promise<Sink> {
  const arrivals: number[] = []
  const recipients = new Set<string>()
  let resets = 0
  let wake = () => {}
  const sockets = new Set<Socket>()
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData: (stream, session, callback) => {
      // The headers are in the first few hundred bytes; the rest is read and dropped.
      let head = ''
      stream.on('data', (chunk: Buffer) => { if (head.length < 8192) head += chunk.toString('latin1') })
      stream.on('end', () => {
        arrivals.push(performance.now())
        for (const to of session.envelope.rcptTo) recipients.add(to.address.toLowerCase())
        if (SUBJECT.test(head.split(/\r?\n\r?\n/, 1)[0]!)) resets += 1
        callback(null, `queued as ${arrivals.length}`)
        wake()
      })
    }
  })
  server.server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  // A connection cut when the service stops must not surface as an unhandled 'error' event.
  server.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(0, '127.0.0.1', () => { server.server.off('error', reject); resolve() })
  })
  const address = server.server.address()
  if (address === null || typeof address === 'string') throw new Error('the SMTP server has no TCP address')
  return {
    url: `smtp://127.0.0.1:${address.port}`,
    arrivals,
    recipients,
    resets: () => resets,
    waitFor: async (count, deadline) => {
      if (arrivals.length >= count) return true
      return await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => { wake = () => {}; resolve(false) }, Math.max(0, deadline - performance.now()))
        wake = () => {
          if (arrivals.length < count) return
          clearTimeout(timer)
          wake = () => {}
          resolve(true)
        }
      })
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.server.close(() => resolve()))
      for (const socket of sockets) socket.destroy()
      await closed
    }
  }
}

/** The value at rank ⌈p·n⌉ of the sorted values (nearest rank). */
function percentile (sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!
}

const ms = (value: number) => `${value.toFixed(1)} ms`
const seconds = (value: number) => `${(value / 1000).toFixed(2)} s`

/** The outbox by kind and status, with attempts and errors: read-only, beside the running service. */
async function outbox (databaseUrl: string): Promise<Array<Record<string, unknown>>> {
  const query = `select kind, status, count(*) as mails, sum(attempts) as attempts, max(attempts) as most_attempts,
    sum(case when last_error is null then 0 else 1 end) as with_error, min(created_at) as first_queued, max(created_at) as last_queued,
    min(completed_at) as first_done, max(completed_at) as last_done
    from mail_outbox group by kind, status order by kind, status`
  if (databaseUrl.startsWith('file:')) {
    const sqlite = new SqliteDatabase(sqliteFile(databaseUrl), { readonly: true, fileMustExist: true })
    try {
      return sqlite.prepare(query).all() as Array<Record<string, unknown>>
    } finally {
      sqlite.close()
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    return (await client.query(query)).rows as Array<Record<string, unknown>>
  } finally {
    await client.end()
  }
}

/** The answers to one run of requests. */
interface Asked {
  latencies: number[]
  statuses: Map<number, number>
  /** A few answers other than 202, with their bodies. */
  oddAnswers: string[]
  /** Requests that got no answer (an error of the connection). */
  failures: string[]
  /** Whether the deadline came before every request was answered. */
  gaveUp: boolean
}

/** One POST /v1/password-reset-tokens per address, IN_FLIGHT at a time, each timed until its answer is read; cut off at `deadline`. */
async function askFor (pool: Pool, addresses: string[], deadline: number): Promise<Asked> {
  const asked: Asked = { latencies: [], statuses: new Map(), oddAnswers: [], failures: [], gaveUp: false }
  const giveUp = new AbortController()
  const timer = setTimeout(() => { giveUp.abort() }, Math.max(0, deadline - performance.now()))
  let next = 0
  const asker = async () => {
    while (next < addresses.length && !giveUp.signal.aborted) {
      const email = addresses[next++]!
      const sent = performance.now()
      try {
        const res = await pool.request({
          method: 'POST',
          path: '/v1/password-reset-tokens',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email }),
          signal: giveUp.signal
        })
        const body = await res.body.text()
        asked.latencies.push(performance.now() - sent)
        asked.statuses.set(res.statusCode, (asked.statuses.get(res.statusCode) ?? 0) + 1)
        if (res.statusCode !== 202 && asked.oddAnswers.length < 3) asked.oddAnswers.push(`${res.statusCode} ${body.slice(0, 200)}`)
      } catch (error) {
        if (!giveUp.signal.aborted) asked.failures.push(error instanceof Error ? error.message : String(error))
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, asker))
  clearTimeout(timer)
  asked.gaveUp = giveUp.signal.aborted
  return asked
}

function describe ({ statuses, failures, oddAnswers }: Pick<Asked, 'statuses' | 'failures' | 'oddAnswers'>): string {
  return `${[...statuses].map(([status, count]) => `${count} × ${status}`).join(', ') || 'no answers'}` +
    `${failures.length > 0 ? `; ${failures.length} failed (${failures[0]})` : ''}${oddAnswers.length > 0 ? `; e.g. ${oddAnswers.join(' | ')}` : ''}`
}

/** Waits until the outbox holds no pending mail, or `deadline`; returns how many are still pending. */
async function settled (databaseUrl: string, deadline: number): Promise<number> {
  for (;;) {
    const pending = (await outbox(databaseUrl)).filter((r) => r.status === 'PENDING').reduce((n, r) => n + Number(r.mails), 0)
    if (pending === 0 || performance.now() >= deadline) return pending
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Runs the burst on one database; returns whether it passed (in --smoke: whether it worked). */
async function benchOn (label: string, postgresUrl: string | undefined, dir: string): Promise<boolean> {
  const database = await scratchDatabase('bench-reset', postgresUrl)
  const sink = await startSink()
  const logFile = join(dir, `service-${label}.log`)
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  let pool: Pool | undefined
  try {
    // seed() always makes posts and products; two and one are the least it takes.
    const seeded = await seed(database.url, { users: ACCOUNTS, posts: 2, products: 1, orders: 0 })
    const addresses = seeded.users.map((u) => u.email)
    const [port, metricsPort] = [await freePort(), await freePort()]
    server = await startServer('service', serviceArguments({ fromSource: SMOKE }), {
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      METRICS_PORT: String(metricsPort),
      RATE_LIMIT_PER_MINUTE: '0',
      MAIL_PER_ADDRESS_PER_MINUTE: '1000000',
      MAIL_PER_ADDRESS_PER_HOUR: '1000000',
      SMTP_URL: sink.url
    }, logFile, port)

    pool = new Pool(server.url, { connections: IN_FLIGHT, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 })
    // A warm-up on the same route, as the other benches warm up: a fresh process answers its
    // first requests while it still compiles their code, which no running service does. Its
    // addresses have no account, so their mails are skipped and none reaches the SMTP server;
    // the burst starts once the sender has dealt with every one of them.
    const warmUpStart = performance.now()
    const warm = await askFor(pool, Array.from({ length: WARM_UP }, (_, i) => `warm-up-${i}@nobody.example`), warmUpStart + WARM_UP_MS)
    const pendingLeft = await settled(database.url, warmUpStart + WARM_UP_MS)
    const warmSorted = [...warm.latencies].sort((a, b) => a - b)
    console.log(`${label}: warm-up: ${WARM_UP} requests for addresses without an account, ${describe(warm)}` +
      (warmSorted.length > 0 ? `; p50 ${ms(percentile(warmSorted, 0.5))}, p99 ${ms(percentile(warmSorted, 0.99))}, max ${ms(warmSorted[warmSorted.length - 1]!)}` : '') +
      `; ${pendingLeft === 0 ? 'outbox settled' : `${pendingLeft} mails still pending`} after ${seconds(performance.now() - warmUpStart)}`)

    const started = performance.now()
    const deadline = started + GIVE_UP_MS
    const { latencies, statuses, oddAnswers, failures, gaveUp: requestsGaveUp } = await askFor(pool, addresses, deadline)
    const answeredAt = performance.now()
    const mailsWhenAnswered = sink.arrivals.length
    const allMail = await sink.waitFor(ACCOUNTS, deadline)
    const gaveUp = requestsGaveUp || !allMail

    const sorted = [...latencies].sort((a, b) => a - b)
    const accepted = statuses.get(202) ?? 0
    const answered = latencies.length
    const arrivals = sink.arrivals
    const lastNeeded = arrivals[ACCOUNTS - 1]
    const first = arrivals[0]
    console.log(`${label}: ${ACCOUNTS} accounts, ${IN_FLIGHT} requests in flight, MAIL_POLL_MS ${process.env.MAIL_POLL_MS ?? 'default (1000)'}`)
    console.log(`${label}: burst answers: ${describe({ statuses, oddAnswers, failures })}`)
    if (sorted.length > 0) {
      console.log(`${label}: request latency p50 ${ms(percentile(sorted, 0.5))}, p99 ${ms(percentile(sorted, 0.99))}, max ${ms(sorted[sorted.length - 1]!)}; ` +
        `all ${answered} answered in ${seconds(answeredAt - started)} (${(answered / ((answeredAt - started) / 1000)).toFixed(0)} req/s), ${mailsWhenAnswered} mails in by then`)
    }
    const distinct = addresses.filter((a) => sink.recipients.has(a.toLowerCase())).length
    console.log(`${label}: mails: ${arrivals.length} in (${sink.resets()} with the reset subject), ${distinct} of the ${ACCOUNTS} addresses reached` +
      (lastNeeded !== undefined ? `; the ${ACCOUNTS}th ${seconds(lastNeeded - started)} after the first request` : '') +
      (lastNeeded !== undefined && first !== undefined && lastNeeded > first
        ? `; sender ${(ACCOUNTS / ((lastNeeded - first) / 1000)).toFixed(1)} mails/s (first mail at ${seconds(first - started)})`
        : ''))
    if (gaveUp) console.log(`${label}: GAVE UP after ${GIVE_UP_MS / 1000} s: ${answered} of ${ACCOUNTS} answered, ${arrivals.length} of ${ACCOUNTS} mails in`)
    // What the sender did, as the outbox recorded it (read while the service still runs), once
    // it has recorded the mails it was sending as the last ones arrived (at most 5 s more).
    await settled(database.url, performance.now() + 5000)
    for (const row of await outbox(database.url)) {
      console.log(`${label}: outbox ${String(row.kind)} ${String(row.status)}: ${String(row.mails)} mails, ${String(row.attempts)} attempts (most ${String(row.most_attempts)}), ` +
        `${String(row.with_error)} with an error; queued ${String(row.first_queued)} – ${String(row.last_queued)}, done ${String(row.first_done)} – ${String(row.last_done)}`)
    }
    const log = readFileSync(logFile, 'utf8').split('\n')
    const logged = (text: string) => log.filter((l) => l.includes(text)).length
    console.log(`${label}: service log: ${logged('"mail sent"')} "mail sent", ${logged('"mail not sent')} "mail not sent", ${logged('round failed')} round failed, ${logged('claim failed')} claim failed, ${logged('"level":50')} errors`)

    if (SMOKE) {
      const allGood = (asked: Asked, count: number) => asked.latencies.length === count && asked.failures.length === 0 && [...asked.statuses.keys()].every((s) => s >= 200 && s < 300)
      const worked = allGood(warm, WARM_UP) && allGood({ latencies, statuses, oddAnswers, failures, gaveUp: requestsGaveUp }, ACCOUNTS) && allMail && distinct === ACCOUNTS
      console.log(`${label}: smoke ${worked ? 'ok' : 'FAILED'}: every answer 2xx and every mail in (no goals)`)
      return worked
    }
    const verdicts: Array<[string, boolean, string]> = [
      [`all ${ACCOUNTS} answers 202`, accepted === ACCOUNTS, `${accepted} of ${ACCOUNTS}`],
      [`all ${ACCOUNTS} mails delivered within ${MAIL_GOAL_MS / 1000} s`, lastNeeded !== undefined && lastNeeded - started <= MAIL_GOAL_MS && distinct === ACCOUNTS,
        lastNeeded === undefined ? `${arrivals.length} in after ${seconds(performance.now() - started)}` : `${seconds(lastNeeded - started)}, ${distinct} addresses`],
      [`request p99 < ${P99_GOAL_MS} ms`, sorted.length === ACCOUNTS && percentile(sorted, 0.99) < P99_GOAL_MS,
        sorted.length === 0 ? 'no answers' : `${ms(percentile(sorted, 0.99))} over ${sorted.length} answers`]
    ]
    for (const [goal, pass, detail] of verdicts) console.log(`${pass ? 'PASS' : 'FAIL'}  ${label}: ${goal}: ${detail}`)
    return verdicts.every(([, pass]) => pass)
  } finally {
    await pool?.close()
    await server?.stop()
    await sink.close()
    await database.drop()
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-reset-'))
try {
  // The measured run starts dist/server.js as `npm start` does; the smoke run (CI) starts the same
  // entry from source through tsx and spares the build, as `npm run bench -- --smoke` does.
  if (!SMOKE) buildService()
  pinLoadGenerator()
  console.log(`Password-reset burst: ${ACCOUNTS} accounts, ${IN_FLIGHT} in flight, ${SMOKE ? 'smoke (from source, no goals)' : 'dist/server.js'}; ` +
    `${PINNED ? 'service on core 0, requests and SMTP server on core 1 (taskset)' : 'not pinned (taskset or a second core missing)'}`)
  let pass = await benchOn('SQLite', undefined, dir)
  const pgUrl = process.env.BENCH_DATABASE_URL
  if (pgUrl !== undefined && pgUrl !== '') pass = await benchOn('PostgreSQL', pgUrl, dir) && pass
  process.exitCode = pass ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
