import assert from 'node:assert/strict'
import { mkdtempSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { startServer } from './process.js'

// These start real server processes on the embedded SQLite file; the database dialect of the
// suite run does not change what they check, so they run on the SQLite pass only.
const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false

describe('server process', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-server-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  test('starts on a new SQLite file (folder created), logs its address, serves /v1 and exits 0 on SIGTERM', async () => {
    const file = join(dir, 'nested', 'folder', 'app.db')
    const server = startServer({ DATABASE_URL: `file:${file}`, ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'root password' })
    const base = await server.listening()
    assert.ok(existsSync(file))
    const created = await fetch(`${base}/v1/users`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'password 1', name: 'A' })
    })
    assert.equal(created.status, 201)
    const login = await fetch(`${base}/v1/sessions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ROOT@example.com', password: 'root password' })
    })
    assert.equal(login.status, 201)
    assert.equal(((await login.json()) as { user: { role: string } }).user.role, 'ADMIN')
    server.child.kill('SIGTERM')
    assert.equal(await server.exit(), 0)
    assert.doesNotMatch(server.stdout(), /root password|password 1/)
    // Without BACKUP_URL the database is copied nowhere, and the log says so once.
    const warnings = server.stdout().split('\n').filter((line) => line.includes('no backup'))
    assert.equal(warnings.length, 1)
    assert.equal(JSON.parse(warnings[0]!).level, 40)
  })

  test('finishes an in-flight request during a graceful shutdown', async () => {
    // At debug the server also logs each request's arrival (at info only its completion).
    const server = startServer({ DATABASE_URL: `file:${join(dir, 'inflight.db')}`, LOG_LEVEL: 'debug' })
    const base = await server.listening()
    // A user creation hashes a password (tens of milliseconds). The signal goes out once the
    // server has logged the request's arrival, so the request is in flight, whatever the load.
    const pending = fetch(`${base}/v1/users`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'b@example.com', password: 'password 1', name: 'B' })
    })
    await server.logged(/"msg":"incoming request"/)
    server.child.kill('SIGTERM')
    const res = await pending
    assert.equal(res.status, 201)
    assert.equal(await server.exit(), 0)
  })

  // Every rule of loadConfig is unit-tested in test/config; here, that the process obeys it.
  const badValues: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: 'eighty' }],
    ['ADMIN_PASSWORD', { ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'short' }],
    ['BACKUP_URL', { BACKUP_URL: 'ftp://backups.example.com/api' }],
    // A folder that cannot be made, whoever runs the test (root included): its parent is a file.
    ['BACKUP_URL', { BACKUP_URL: 'file:/dev/null/backups' }]
  ]
  for (const [variable, env] of badValues) {
    test(`${JSON.stringify(env)} stops start-up with a non-zero exit and one line naming ${variable}`, async () => {
      const server = startServer({ DATABASE_URL: `file:${join(dir, 'never.db')}`, ...env })
      const code = await server.exit()
      assert.notEqual(code, 0)
      const lines = server.stderr().trim().split('\n')
      assert.equal(lines.length, 1, server.stderr())
      assert.match(lines[0]!, new RegExp(`^Invalid configuration: ${variable}: `))
    })
  }
})
