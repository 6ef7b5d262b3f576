import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { after, test } from 'node:test'
import { SmtpCapture } from '../support/smtp-capture.js'
import { buildTestApp, uniqueEmail } from '../helper.js'

// Asking for a reset or a verification mail takes the same time whether or not an account has
// the address: both do the same database work (count the address, queue a mail naming no
// account); the account is looked up later, by the sender. Measured as medians of interleaved
// requests, compared with each other, never with a fixed time (no test assumes the machine's
// speed). The bound: the slower median is at most 1.5 times the faster plus 1 ms, loose enough
// for a shared CI machine, tight enough for a password hash or an SMTP exchange on one path.
// What makes the work the same is checked directly too: the mail queued for either address is
// the same row, naming no account.

const smtp = await SmtpCapture.start()
const { app, close } = await buildTestApp({ SMTP_URL: smtp.url, MAIL_PER_ADDRESS_PER_MINUTE: '1000000', MAIL_PER_ADDRESS_PER_HOUR: '1000000' })
after(async () => { await close(); await smtp.stop() })

const ROUNDS = 60

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

for (const url of ['/v1/password-reset-tokens', '/v1/email-verification-tokens']) {
  test(`${url}: a known and an unknown address take the same time (interleaved medians)`, { timeout: 120_000 }, async (t) => {
    const known: string[] = []
    for (let i = 0; i < 10; i++) {
      const email = uniqueEmail('timed')
      assert.equal((await app.inject({ method: 'POST', url: '/v1/users', payload: { email, password: 'correct horse battery', name: 'Tim' } })).statusCode, 201)
      known.push(email)
    }
    const timed = async (email: string): Promise<number> => {
      const started = performance.now()
      const res = await app.inject({ method: 'POST', url, payload: { email } })
      const took = performance.now() - started
      assert.equal(res.statusCode, 202, res.body)
      return took
    }
    // Warm-up: the first requests of a route pay for compiling its statements.
    for (let i = 0; i < 5; i++) { await timed(known[i]!); await timed(uniqueEmail('warm')) }
    const times = { known: [] as number[], unknown: [] as number[] }
    for (let i = 0; i < ROUNDS; i++) {
      // Which goes first alternates, so neither always follows the other.
      const pair: Array<['known' | 'unknown', string]> = [['known', known[i % known.length]!], ['unknown', uniqueEmail('nobody')]]
      if (i % 2 === 1) pair.reverse()
      for (const [kind, email] of pair) times[kind].push(await timed(email))
    }
    const k = median(times.known)
    const u = median(times.unknown)
    const [fast, slow] = k < u ? [k, u] : [u, k]
    t.diagnostic(`median known ${k.toFixed(2)} ms, unknown ${u.toFixed(2)} ms (${ROUNDS} each, interleaved)`)
    assert.ok(slow <= fast * 1.5 + 1, `medians differ beyond the bound: known ${k.toFixed(2)} ms, unknown ${u.toFixed(2)} ms`)
    // Every mail asked for here names no account (sign-up's own verification mail does).
    const kind = url.includes('reset') ? 'reset-password' : 'verify-email'
    const queued = await app.db.selectFrom('mail_outbox').select(['user_id']).where('address', '=', known[0]!).where('kind', '=', kind).execute()
    assert.ok(queued.length > 1)
    assert.equal(queued.filter((row) => row.user_id !== null).length, kind === 'verify-email' ? 1 : 0)
  })
}
