import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { countHit, lockHitKey, recordHit, type Window } from '../../src/limits/sliding-window.js'
import { ApiError } from '../../src/http/errors.js'
import { write } from '../../src/db/write.js'
import { buildTestApp, dialect, gate, waitFor } from '../helper.js'

// The sliding windows counted in the database (limits/sliding-window.ts): a hit's time is the
// time it was counted under the key's lock, so a request that asked first but got the lock last
// is not counted before the hits recorded meanwhile.

const { app, close } = await buildTestApp()
after(close)

const window: Window = { name: 'test', limit: 1, seconds: 60 }

/** Whether a session waits for an advisory lock in this test's database (PostgreSQL; other files share the server). */
async function advisoryLockAwaited (): Promise<boolean> {
  const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_locks
    where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`.execute(app.db)
  return rows[0]!.waiting > 0
}

describe('sliding windows counted in the database', () => {
  test('a hit that waited for the key is counted when it gets it: Retry-After never exceeds the window', async () => {
    const key = 'waited-for'
    const locked = gate()
    const release = gate()
    // A takes the key and holds it; B asks for the same key meanwhile and waits.
    const first = write(app.db, async (trx) => {
      await lockHitKey(trx, dialect, 'test', key)
      locked.open()
      await release.opened
      return await countHit(trx, dialect, 'test', key, [window], 'first')
    })
    await locked.opened
    const asked = Date.now()
    const second = recordHit(app.db, dialect, 'test', key, [window], 'second').then(() => undefined, (error: unknown) => error)
    if (dialect === 'postgres') await waitFor('the second hit to wait for the key', advisoryLockAwaited)
    // A counts its hit after B asked (the clock has moved on), then commits.
    while (Date.now() <= asked + 1) await new Promise((resolve) => setImmediate(resolve))
    release.open()
    const counted = await first
    assert.equal(counted.refused, false)
    const error = await second
    assert.ok(error instanceof ApiError, String(error))
    assert.equal(error.code, 'TOO_MANY_REQUESTS')
    const retryAfter = Number(error.headers['retry-after'])
    assert.ok(retryAfter >= 1 && retryAfter <= window.seconds, `Retry-After ${retryAfter} within the ${window.seconds} s window`)
    assert.match(String(error.headers.ratelimit), new RegExp(`^"test";r=0;t=${retryAfter}$`))
    const recorded = await app.db.selectFrom('limit_hits').select('at').where('scope', '=', 'test').where('key', '=', key).execute()
    assert.equal(recorded.length, 1, 'the refused hit is not recorded')
  })
})
