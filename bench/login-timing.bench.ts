// Password hashing cost, and log-in time for an unknown e-mail against a wrong password for a
// known one: the two must be about the same (docs/api.md), which a timed test could not
// check reliably on a noisy machine. Prints medians and the ratio, measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { openDatabase } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { hashPassword, verifyPassword } from '../src/users/password.js'

const ROUNDS = 30

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

async function time (fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

const hashTimes: number[] = []
const verifyTimes: number[] = []
const sample = await hashPassword('warm up the pool')
for (let i = 0; i < ROUNDS; i++) {
  hashTimes.push(await time(() => hashPassword(`password number ${i}`)))
  verifyTimes.push(await time(() => verifyPassword(sample, `wrong ${i}`)))
}
console.log(`argon2id hash   (m=19 MiB, t=2, p=1): median ${median(hashTimes).toFixed(1)} ms over ${ROUNDS}`)
console.log(`argon2id verify (wrong password):     median ${median(verifyTimes).toFixed(1)} ms over ${ROUNDS}`)

const dir = mkdtempSync(join(tmpdir(), 'bench-login-'))
const config = loadConfig({ DATABASE_URL: `file:${join(dir, 'bench.db')}`, LOG_LEVEL: 'silent', LOGIN_FAILURES_PER_EMAIL: '1000000', LOGIN_FAILURES_PER_CLIENT: '1000000', LOGIN_FAILURES_PER_ACCOUNT: '1000000' })
const database = openDatabase(config.databaseUrl)
await migrateToLatest(database.db, database.dialect)
const app = await buildApp({ config, database, logger: false })
await app.inject({ method: 'POST', url: '/v1/users', payload: { email: 'known@example.com', password: 'the right one', name: 'Known' } })

const unknown: number[] = []
const wrong: number[] = []
for (let i = 0; i < ROUNDS; i++) {
  // Alternate, so drift in machine load touches both series alike.
  unknown.push(await time(() => app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: 'nobody@example.com', password: 'whatever it is' } })))
  wrong.push(await time(() => app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: 'known@example.com', password: 'whatever it is' } })))
}
const ratio = median(unknown) / median(wrong)
console.log(`log-in, unknown e-mail:  median ${median(unknown).toFixed(1)} ms`)
console.log(`log-in, wrong password:  median ${median(wrong).toFixed(1)} ms`)
console.log(`ratio unknown/wrong: ${ratio.toFixed(2)} (1.00 = indistinguishable)`)
await app.close()
rmSync(dir, { recursive: true, force: true })
