// The native-module soak (native-soak.test.ts runs this as a child process, with --expose-gc):
// SQLite databases opened and closed as the service and its tests do, statements prepared and
// dropped by the thousand, garbage collection forced between rounds, and databases left open
// with live statements when the process ends, the case that once aborted Node at exit (a
// statement finalized after its environment was torn down). It prints `ready`, then exits 0
// on SIGTERM or SIGINT, after one more collection, leaving what is open to the exit itself.
// Collections are both forced (gc()) and left to V8.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setImmediate as turn } from 'node:timers/promises'
import { sql } from 'kysely'
import { openDatabase, sqliteHandleOf } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'

const ROUNDS = 12
// More than the connection's statement cache holds (500), so that the oldest are dropped.
const STATEMENTS = 800
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with --expose-gc')

const dir = mkdtempSync(join(tmpdir(), 'api-native-soak-'))
const open: Array<ReturnType<typeof openDatabase>> = []
let prepared = 0
for (let round = 0; round < ROUNDS; round++) {
  const handle = openDatabase(`file:${join(dir, `round-${round}.db`)}`)
  await migrateToLatest(handle.db, handle.dialect)
  await sql`select count(*) from users`.execute(handle.db)
  const connection = sqliteHandleOf(handle.db)!.reader
  for (let i = 0; i < STATEMENTS; i++) {
    // A new text each time, so better-sqlite3 prepares a new statement, which is then dropped.
    connection.prepare(`select ${i} + ? as n, id from users where id > ${round}`).get(BigInt(i))
    prepared += 1
  }
  if (round % 2 === 0) await handle.db.destroy()
  else open.push(handle)
  churn()
  if (round % 3 === 0) gc()
  await turn()
}
// A handle nobody closes nor keeps: its statements and its database go to the collector.
sqliteHandleOf(openDatabase(`file:${join(dir, 'dropped.db')}`).db)!.reader.prepare('select 1').get()
gc()

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    gc()
    rmSync(dir, { recursive: true, force: true })
    process.stdout.write(`exiting on ${signal} with ${open.length} databases open\n`)
    process.exit(0)
  })
}
process.stdout.write(`ready: ${prepared} statements prepared, ${open.length} databases open\n`)
setInterval(churn, 50)

// Garbage, so that the collector runs on its own schedule while statements just dropped are
// still young: a collection forced by gc() finalizes them differently from V8's own, and it is
// in V8's own young-generation collections that the old driver's statements aborted the process.
function churn (): void {
  const kept: unknown[] = []
  for (let i = 0; i < 100; i++) {
    kept.push(Array.from({ length: 20_000 }, (_, k) => ({ k })))
    if (kept.length > 5) kept.shift()
  }
}
