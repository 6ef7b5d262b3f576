import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { freePort } from '../../scripts/free-port.mjs'
import { startServer } from './process.js'

// The real server opens the private metrics listener on METRICS_HOST:METRICS_PORT beside the
// public one, and closes it on SIGTERM. Process-level, so it runs on the SQLite pass only.
const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false

describe('metrics listener in the server process', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-metrics-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  test('serves /metrics privately, 404 on the public port, closed on SIGTERM', async () => {
    const port = await freePort()
    const server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, METRICS_HOST: '127.0.0.1', METRICS_PORT: String(port) })
    const base = await server.listening()
    await server.logged(/metrics listening at http:\/\/127\.0\.0\.1:\d+\/metrics/)
    const scraped = await fetch(`http://127.0.0.1:${port}/metrics`)
    assert.equal(scraped.status, 200)
    assert.match(await scraped.text(), /nodejs_version_info/)
    const pub = await fetch(`${base}/metrics`)
    assert.equal(pub.status, 404)
    assert.equal(((await pub.json()) as { code: string }).code, 'NOT_FOUND')
    server.child.kill('SIGTERM')
    assert.equal(await server.exit(), 0)
    await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`))
  })

  test('a metrics port already taken stops start-up with a non-zero exit', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = taken.address() as { port: number }
      const server = startServer({ DATABASE_URL: `file:${join(dir, 'taken.db')}`, METRICS_PORT: String(port) })
      assert.notEqual(await server.exit(), 0)
      assert.match(server.stdout(), /could not listen/)
    } finally {
      await new Promise<void>((resolve) => taken.close(() => { resolve() }))
    }
  })
})
