import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/config.js'
import { openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { trustworthyForwardedFor } from '../../src/pipeline/forwarded-for.js'
import { flushAccessLines } from '../../src/pipeline/request-log.js'
import { scratchDatabase } from '../scratch-database.js'

// Behind a trusted proxy that passes the client's own X-Forwarded-For through, the entry the
// service takes as the client address is the client's text. One that is not an IP address is
// no address: the request counts as the proxy's own (one window for all such junk, not one per
// value), and nothing of it reaches the log line unescaped.

const LIMIT = 3
const lines: string[] = []
const stream = new Writable({
  write (chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(line)
    done()
  }
})
const scratch = await scratchDatabase('forwarded-for')
const config = loadConfig({ DATABASE_URL: scratch.url, LOG_LEVEL: 'info', TRUST_PROXY: '127.0.0.1', RATE_LIMIT_PER_MINUTE: String(LIMIT) })
const database = openDatabase(config.databaseUrl)
await migrateToLatest(database.db, database.dialect)
const app = await buildApp({ config, database, logger: { level: 'info', stream } })
after(async () => { await app.close(); await scratch.drop() })

const get = async (forwardedFor: string, id: string): Promise<number> =>
  (await app.inject({ method: 'GET', url: '/v1/posts', headers: { 'x-forwarded-for': forwardedFor, 'x-request-id': id } })).statusCode

describe('X-Forwarded-For from a trusted proxy', () => {
  test('entries that are not IP addresses all count in the proxy\'s one window', async () => {
    const junk = ['x\\', 'junk-1', '123', '0x7f.1', '127.1', '198.51.100.7:8080', '[2001:db8::1]', ' ', 'x"y', '198.51.100.7, junk-2']
    const statuses: number[] = []
    for (const [i, value] of junk.entries()) statuses.push(await get(value, `junk-${i}`))
    assert.deepEqual(statuses, [...Array(LIMIT).fill(200), ...Array(junk.length - LIMIT).fill(429)])
    // A real address still is its own client, and one behind junk on the left too.
    assert.equal(await get('198.51.100.20', 'real-1'), 200)
    assert.equal(await get('not an address, 198.51.100.21', 'real-2'), 200)
  })

  test('every access line is valid JSON with a real address', async () => {
    flushAccessLines()
    await new Promise((resolve) => setImmediate(resolve))
    const access = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.msg === 'request completed')
    const byId = new Map(access.map((l) => [l.reqId, l]))
    for (let i = 0; i < 10; i++) assert.equal(byId.get(`junk-${i}`)?.remoteAddress, '127.0.0.1', `junk-${i}`)
    assert.equal(byId.get('real-1')?.remoteAddress, '198.51.100.20')
    assert.equal(byId.get('real-2')?.remoteAddress, '198.51.100.21')
  })

  test('the header is read up to its nearest entry that is not an address', () => {
    assert.equal(trustworthyForwardedFor('198.51.100.1, 10.0.0.1'), '198.51.100.1, 10.0.0.1')
    assert.equal(trustworthyForwardedFor('198.51.100.1, junk, 10.0.0.1'), ' 10.0.0.1')
    assert.equal(trustworthyForwardedFor('10.0.0.1, junk'), undefined)
    assert.equal(trustworthyForwardedFor(''), undefined)
    assert.equal(trustworthyForwardedFor('2001:db8::1'), '2001:db8::1')
  })
})
