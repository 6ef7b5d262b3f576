import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Kysely } from 'kysely'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { write } from '../../src/db/write.js'
import { upgradeDatabase } from '../upgrade-database.js'

// The upgrade that counts sign-ups like the other limits keeps the last hour's sign-up attempts:
// an address that used its sign-ups before the upgrade has not got them back after it; and down
// again, they are sign-up attempts again.

const upgrade = upgradeDatabase()

test('sign-up attempts move into the limits\' hits and back', { timeout: 60_000 }, async () => {
  const { db, dialect } = upgrade.handle
  await migrateTo(db, dialect, '016-accounts-and-mail')
  const old = db as unknown as Kysely<any>
  const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString()
  await write(old, async (trx) => await (trx as Kysely<any>).insertInto('signup_attempts').values([
    { client: '10.4.0.1', attempted_at: at(30) }, { client: '10.4.0.1', attempted_at: at(10) }, { client: '10.4.0.2', attempted_at: at(5) }
  ]).execute())

  await migrateToLatest(db, dialect)
  const hits = await db.selectFrom('limit_hits').select(['key']).where('scope', '=', 'signup').orderBy('key').execute()
  assert.deepEqual(hits.map((h) => h.key), ['10.4.0.1', '10.4.0.1', '10.4.0.2'])

  await migrateTo(db, dialect, '016-accounts-and-mail')
  const back = await old.selectFrom('signup_attempts').select(['client']).orderBy('client').execute()
  assert.deepEqual(back.map((r: { client: string }) => r.client), ['10.4.0.1', '10.4.0.1', '10.4.0.2'])
  assert.equal((await old.selectFrom('limit_hits').select('id').execute()).length, 0)
  await migrateToLatest(db, dialect)
})
