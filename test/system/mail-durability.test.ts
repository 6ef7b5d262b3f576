import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import Sqlite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import { freePort } from '../../scripts/free-port.mjs'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/config.js'
import { openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { QUIET_LIMITS } from '../helper.js'
import { SmtpCapture, tokenIn, type CapturedMail } from '../support/smtp-capture.js'
import { scratchDatabase } from '../scratch-database.js'
import { startServer, type ServerProcess } from '../server/process.js'
import { body } from './api-client.js'
import { json, waitFor } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// A mail the service has answered for (202) is sent, and sent once: after the process is
// killed (SIGKILL) at once after the answer, after the SMTP server has been down for several
// attempts, and with three instances sending from one PostgreSQL database.

const VERIFY_SUBJECT = 'Verify your e-mail address'
const RESET_SUBJECT = 'Reset your password'

const resetMailsTo = (smtp: SmtpCapture, address: string): CapturedMail[] =>
  smtp.mails.filter((m) => m.to.includes(address) && m.subject === RESET_SUBJECT)


/** The outbox rows of one address, read from the SQLite file beside the running server. */
function outboxOf (file: string, address: string): Array<{ kind: string, status: string, attempts: number, last_error: string | null }> {
  const db = new Sqlite(file, { readonly: true })
  try {
    return db.prepare('select kind, status, attempts, last_error from mail_outbox where address = ? order by id').all(address) as Array<{ kind: string, status: string, attempts: number, last_error: string | null }>
  } finally {
    db.close()
  }
}

/** A server on a file database in a folder of its own, with an SMTP capture; all removed after the test. */
async function setUp (smtpOptions: { delayMs?: number } = {}): Promise<{ smtp: SmtpCapture, file: string, env: Record<string, string>, start: () => Promise<{ server: ServerProcess, base: string }> }> {
  const dir = mkdtempSync(join(tmpdir(), 'api-mail-durability-'))
  const smtp = await SmtpCapture.start(smtpOptions)
  const file = join(dir, 'app.db')
  const env = { DATABASE_URL: `file:${file}`, PORT: String(await freePort()), SMTP_URL: smtp.url, MAIL_POLL_MS: '100', SHUTDOWN_GRACE_MS: '0' }
  const servers: ServerProcess[] = []
  after(async () => {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) { server.child.kill('SIGTERM'); await server.exit() }
    }
    await smtp.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  return {
    smtp,
    file,
    env,
    start: async () => {
      const server = startServer(env)
      servers.push(server)
      return { server, base: await server.listening() }
    }
  }
}

test('SIGKILL right after a reset request\'s 202: the restarted server sends the mail, once, and its token works', { timeout: 180_000 }, async (t) => {
  const { smtp, file, start } = await setUp()
  const address = 'killed@example.com'
  let { server, base } = await start()
  await body(await fetch(`${base}/v1/users`, json({ email: address, password: 'old password', name: 'Killed' })), 201)
  await smtp.waitFor((m) => m.to.includes(address) && m.subject === VERIFY_SUBJECT, 15_000)

  // No mail can be answered before the kill: the SMTP server holds each one until it is stopped.
  smtp.delayMs = 600_000
  const res = await fetch(`${base}/v1/password-reset-tokens`, json({ email: address }))
  server.child.kill('SIGKILL')
  assert.equal(res.status, 202)
  assert.equal(await res.text(), '')
  await server.exit()
  const beforeRestart = outboxOf(file, address).find((row) => row.kind === 'reset-password')
  assert.ok(beforeRestart !== undefined, 'the 202 came after the mail was queued')
  assert.equal(beforeRestart.status, 'PENDING')
  // A mail the killed process may have handed over is never answered: the capture drops it,
  // as a relay drops a message whose client went away before the end of its answer.
  await smtp.stop()
  assert.equal(resetMailsTo(smtp, address).length, 0)
  smtp.delayMs = 0
  await smtp.restart()

  const restarted = Date.now();
  ({ server, base } = await start())
  // A mail the killed process had claimed waits out its claim's lease (90 s) before it is sent again.
  const mail = await smtp.waitFor((m) => m.to.includes(address) && m.subject === RESET_SUBJECT, 120_000)
  const afterMs = Date.now() - restarted
  assert.equal((await fetch(`${base}/v1/password-resets`, json({ token: tokenIn(mail), newPassword: 'new password' }))).status, 204)
  assert.equal((await fetch(`${base}/v1/sessions`, json({ email: address, password: 'new password' }))).status, 201)
  // Once its sending is recorded, no instance sends it again.
  await waitFor('the reset mail is recorded as sent', async () => outboxOf(file, address).find((r) => r.kind === 'reset-password')?.status === 'SENT', 15_000)
  const row = outboxOf(file, address).find((r) => r.kind === 'reset-password')!
  t.diagnostic(`figures ${JSON.stringify({ claimedBeforeKill: beforeRestart.attempts, mailAfterRestartMs: afterMs, attempts: row.attempts, status: row.status })}`)
  assert.equal(resetMailsTo(smtp, address).length, 1, 'the reset mail arrived exactly once')
  assert.equal(row.status, 'SENT')
})

test('SMTP down for several attempts: the mail is sent once it is back, once', { timeout: 180_000 }, async (t) => {
  const { smtp, file, env, start } = await setUp()
  env.MAIL_RETRY_SCHEDULE = '0,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3'
  const address = 'outage@example.com'
  const { server, base } = await start()
  await body(await fetch(`${base}/v1/users`, json({ email: address, password: 'old password', name: 'Outage' })), 201)
  await smtp.waitFor((m) => m.to.includes(address) && m.subject === VERIFY_SUBJECT, 15_000)

  await smtp.stop()
  const res = await fetch(`${base}/v1/password-reset-tokens`, json({ email: address }))
  assert.equal(res.status, 202)
  // The second attempt failed too (the log line of each failed attempt carries its number).
  await server.logged(/^(?=.*"kind":"reset-password")(?=.*"attempts":2\b)(?=.*"msg":"mail not sent: retried later").*$/m)
  const during = outboxOf(file, address).find((r) => r.kind === 'reset-password')!
  assert.equal(during.status, 'PENDING')
  assert.ok(during.attempts >= 2, `attempts ${during.attempts}`)
  assert.ok(during.last_error !== null && during.last_error !== '', 'the failure is recorded')
  assert.equal(resetMailsTo(smtp, address).length, 0)

  await smtp.restart()
  const mail = await smtp.waitFor((m) => m.to.includes(address) && m.subject === RESET_SUBJECT, 15_000)
  assert.equal((await fetch(`${base}/v1/password-resets`, json({ token: tokenIn(mail), newPassword: 'new password' }))).status, 204)
  await waitFor('the reset mail is recorded as sent', async () => outboxOf(file, address).find((r) => r.kind === 'reset-password')?.status === 'SENT', 15_000)
  const row = outboxOf(file, address).find((r) => r.kind === 'reset-password')!
  t.diagnostic(`figures ${JSON.stringify({ attempts: row.attempts, status: row.status, lastError: during.last_error })}`)
  assert.equal(resetMailsTo(smtp, address).length, 1, 'the reset mail arrived exactly once')
  assert.equal(row.status, 'SENT')
  assert.match(server.stdout(), /"msg":"mail sent"/)
})

// A PostgreSQL to create a scratch database on: TEST_DATABASE_URL, or a private cluster (as the
// other system tests start one) where PostgreSQL's binaries are installed.
const postgresSkip = process.env.TEST_DATABASE_URL !== undefined ? false : skipWithoutPostgres

test('three instances on one PostgreSQL: each of 120 mails is sent exactly once', { skip: postgresSkip, timeout: 180_000 }, async (t) => {
  const held: { pg?: PrivatePostgres, drop?: () => Promise<void>, apps: FastifyInstance[] } = { apps: [] }
  const smtp = await SmtpCapture.start()
  after(async () => {
    for (const app of held.apps) await app.close()
    await held.drop?.()
    held.pg?.destroy()
    await smtp.stop()
  })
  let adminUrl = process.env.TEST_DATABASE_URL
  if (adminUrl === undefined) {
    held.pg = await startPrivatePostgres()
    adminUrl = held.pg.url
  }
  const scratch = await scratchDatabase('mail_durability', adminUrl)
  held.drop = scratch.drop
  const config = loadConfig({ ...QUIET_LIMITS, DATABASE_URL: scratch.url, SMTP_URL: smtp.url, MAIL_POLL_MS: '50' })
  for (let i = 0; i < 3; i++) {
    const database = openDatabase(config.databaseUrl, { preparedStatements: config.pgPreparedStatements })
    if (i === 0) await migrateToLatest(database.db, database.dialect)
    const app = await buildApp({ config, database, logger: false })
    held.apps.push(app)
    await app.ready()
  }
  const apps = held.apps
  const ACCOUNTS = 60
  const addresses = Array.from({ length: ACCOUNTS }, (_, i) => `three${i}@example.com`)
  for (const [i, email] of addresses.entries()) {
    const res = await apps[i % 3]!.inject({ method: 'POST', url: '/v1/users', payload: { email, password: 'three password', name: `Three ${i}` } })
    assert.equal(res.statusCode, 201, res.body)
  }
  for (const [i, email] of addresses.entries()) {
    const res = await apps[(i + 1) % 3]!.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email } })
    assert.equal(res.statusCode, 202, res.body)
  }
  await smtp.waitForCount(2 * ACCOUNTS, 60_000)
  // Once every sending is recorded, no instance sends any of them again.
  await waitFor('every mail is recorded as sent', async () => (await apps[0]!.db.selectFrom('mail_outbox').select('id').where('status', '!=', 'SENT').execute()).length === 0, 30_000)

  const pairs = new Map<string, number>()
  for (const mail of smtp.mails) {
    assert.equal(mail.to.length, 1)
    const key = `${mail.to[0]} ${mail.subject}`
    pairs.set(key, (pairs.get(key) ?? 0) + 1)
  }
  const expected = new Map(addresses.flatMap((a) => [[`${a} ${VERIFY_SUBJECT}`, 1], [`${a} ${RESET_SUBJECT}`, 1]] as Array<[string, number]>))
  assert.deepEqual(new Map([...pairs].sort()), new Map([...expected].sort()), 'every (address, subject) exactly once')
  assert.equal(smtp.mails.length, 2 * ACCOUNTS)
  const ids = smtp.mails.map((m) => m.messageId)
  assert.ok(ids.every((id) => id !== undefined && id !== ''), 'every mail has a Message-ID')
  assert.equal(new Set(ids).size, ids.length, 'no Message-ID repeats')

  // Which instance sent how many (each counts its own in mail_sent_total).
  const sentBy = await Promise.all(apps.map(async (app) => {
    const text = await app.metricsRegistry.metrics()
    return [...text.matchAll(/^mail_sent_total\{kind="[^"]+"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0)
  }))
  t.diagnostic(`figures ${JSON.stringify({ mails: smtp.mails.length, sentByInstance: sentBy })}`)
  assert.equal(sentBy.reduce((a, b) => a + b, 0), 2 * ACCOUNTS)
  const tokens = smtp.mails.filter((m) => m.subject === RESET_SUBJECT).map(tokenIn)
  assert.equal(new Set(tokens).size, ACCOUNTS, 'a token of its own in each reset mail')
})
