import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'

// Ids are issued only from 1 to 9007199254740991 (2^53 - 1), the integers every JSON client
// reads exactly (a JavaScript client's JSON.parse included), and the database itself enforces
// it. A path id is still matched as an exact 64-bit decimal: above this bound it simply finds
// nothing (404).
//
// PostgreSQL: each identity sequence stops at the bound (the insert after the last id fails
// rather than wrapping), and a CHECK refuses a larger explicit id (OVERRIDING SYSTEM VALUE).
// SQLite: ALTER TABLE cannot add a CHECK to an existing table, and rebuilding every table
// (with their foreign keys) to add one is a heavier, riskier migration than the rule needs, so
// a trigger per table aborts any insert or update that leaves an id above the bound; the
// statement then fails and changes nothing, exactly as a failed CHECK would.

export const MAX_ISSUED_ID = '9007199254740991'

const TABLES = ['users', 'sessions', 'login_failures', 'posts', 'products', 'orders', 'idempotency_keys'] as const

export function idsWithinJsonRange (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      for (const table of TABLES) await limitIds(db, dialect, table)
    },
    async down (db: Kysely<any>) {
      for (const table of TABLES) {
        if (dialect === 'postgres') {
          await sql`alter table ${sql.table(table)} drop constraint ${sql.ref(`${table}_id_range`)}`.execute(db)
          await sql`alter table ${sql.table(table)} alter column id set maxvalue 9223372036854775807`.execute(db)
        } else {
          await sql`drop trigger ${sql.ref(`${table}_id_range_insert`)}`.execute(db)
          await sql`drop trigger ${sql.ref(`${table}_id_range_update`)}`.execute(db)
        }
      }
    }
  }
}

/** Holds a table's ids within 1 to 2^53 - 1 (see the top of this file); later tables use it too. */
export async function limitIds (db: Kysely<any>, dialect: DialectName, table: string): Promise<void> {
  if (dialect === 'postgres') {
    await sql`alter table ${sql.table(table)} alter column id set maxvalue ${sql.raw(MAX_ISSUED_ID)}`.execute(db)
    await sql`alter table ${sql.table(table)} add constraint ${sql.ref(`${table}_id_range`)} check (id between 1 and ${sql.raw(MAX_ISSUED_ID)})`.execute(db)
  } else {
    for (const event of ['insert', 'update of id'] as const) {
      const name = `${table}_id_range_${event === 'insert' ? 'insert' : 'update'}`
      await sql`create trigger ${sql.ref(name)} after ${sql.raw(event)} on ${sql.table(table)}
        when new.id < 1 or new.id > ${sql.raw(MAX_ISSUED_ID)}
        begin select raise(abort, ${sql.lit(`${table}.id out of range`)}); end`.execute(db)
    }
  }
}
