import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { write } from '../../src/db/write.js'
import { assertError, buildTestApp, createAdmin, createUser, dialect, type TestApp } from '../helper.js'

// GET /v1/system: the service's state for an operator, from the database as it is now: the
// version, the database, the backup, mail waiting and given up on, failing webhook endpoints.

const t = await buildTestApp()
after(t.close)
const { app } = t
const admin = await createAdmin(app)
const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

const system = async (headers: Record<string, string> = admin.auth, target: TestApp = t) => await target.app.inject({ method: 'GET', url: '/v1/system', headers })
const NOW = new Date().toISOString()

// Waiting mail is due tomorrow, so that the app's own sender does not take it while the test counts.
const TOMORROW = new Date(Date.now() + 86_400_000).toISOString()

async function queueMail (status: 'PENDING' | 'FAILED' | 'SENT'): Promise<void> {
  await write(app.db, async (trx) => {
    await trx.insertInto('mail_outbox').values({ kind: 'verify-email', user_id: null, address: 'someone@example.com', data: '{}', message_id: `<${Math.random()}@test>`, status, attempts: 0, next_attempt_at: TOMORROW, created_at: NOW }).execute()
  })
}
async function endpoint (state: { enabled: boolean, failingSince?: string, disabledReason?: string }): Promise<void> {
  await write(app.db, async (trx) => {
    await trx.insertInto('webhook_endpoints').values({
      user_id: admin.id, url: 'https://example.com/hook', description: '', event_types: '["*"]', enabled: state.enabled ? 1 : 0,
      disabled_reason: state.disabledReason ?? null, secret: 'sealed', failing_since: state.failingSince ?? null, created_at: NOW, updated_at: NOW
    }).execute()
  })
}

describe('GET /v1/system', () => {
  test('an administrator reads the version, the database and the backup; no backup here', async () => {
    const res = await system()
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['backup', 'database', 'mail', 'version', 'webhooks'])
    assert.equal(body.version, version)
    assert.equal(body.database, dialect)
    // The test databases keep no copy: no BACKUP_URL on SQLite, archive_mode off on PostgreSQL.
    assert.deepEqual(body.backup, { enabled: false, target: null, lagSeconds: null, lastError: null })
  })

  test('mail waiting and given up on, and failing endpoints, counted as they are now', async () => {
    const before = (await system()).json()
    await queueMail('PENDING')
    await queueMail('PENDING')
    await queueMail('FAILED')
    await queueMail('SENT')
    await endpoint({ enabled: true, failingSince: NOW })
    await endpoint({ enabled: false, disabledReason: 'failing: 30 deliveries in a row' })
    await endpoint({ enabled: true })
    await endpoint({ enabled: false })
    const now = (await system()).json()
    assert.deepEqual(now.mail, { queued: before.mail.queued + 2, failed: before.mail.failed + 1 })
    assert.deepEqual(now.webhooks, { failingEndpoints: before.webhooks.failingEndpoints + 2 })
  })

  test('SQLite with BACKUP_URL: enabled, the target without credentials; no lag before replication runs', { skip: dialect !== 'sqlite' }, async () => {
    const backups = mkdtempSync(join(tmpdir(), 'api-system-backup-'))
    const withBackup = await buildTestApp({ BACKUP_URL: `file:${backups}` })
    try {
      const owner = await createAdmin(withBackup.app)
      const res = await system(owner.auth, withBackup)
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json().backup, { enabled: true, target: backups, lagSeconds: null, lastError: null })
    } finally {
      await withBackup.close()
      rmSync(backups, { recursive: true, force: true })
    }
  })

  test('anyone but an administrator: 401 without a session, 403 ACCESS_DENIED for a user, 403 INSUFFICIENT_SCOPE for any key', async () => {
    assertError(await system({}), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await system({ authorization: `Bearer ${'Z'.repeat(43)}` }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await system((await createUser(app)).auth), 403, 'ACCESS_DENIED')
    const key = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin.auth, payload: { name: 'monitor', scopes: ['orders:read', 'webhooks:read'] } })
    assert.equal(key.statusCode, 201, key.body)
    assertError(await system({ authorization: `Bearer ${key.json().key as string}` }), 403, 'INSUFFICIENT_SCOPE')
  })
})
