import { sql, type RawBuilder } from 'kysely'
import { writeStatement } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import type { Db } from '../db/schema.js'

// Which instance sends which item of an outbox table. A claim takes due items and leases them:
// their attempt count goes up and `lease_until` keeps every other claim off them until the
// attempt is recorded or, if the instance died mid-send, the lease runs out and the next claim
// retries it (at least once). On PostgreSQL several instances claim at once, each skipping the
// rows another is claiming (FOR UPDATE SKIP LOCKED); on SQLite the one statement is atomic
// under the database's write lock. Every outbox table has the columns named here.

export interface ClaimSpec {
  /** The outbox table, aliased `d`, with any join the claim needs (`webhook_deliveries d join …`). */
  from: RawBuilder<unknown>
  table: 'webhook_deliveries' | 'mail_outbox'
  /** Conditions beyond being due (`and e.enabled = 1`), or empty. */
  alsoWhere?: RawBuilder<unknown>
  /** The columns the claim returns. */
  returning: RawBuilder<unknown>
}

/** Claims up to `limit` due items. A look first: an idle poll (nearly every one) is a read, not a write. */
export async function claimDue<Row> (db: Db, dialect: DialectName, spec: ClaimSpec, limit: number, now: Date, leaseMs: number): Promise<Row[]> {
  const nowText = now.toISOString()
  if (limit <= 0) return []
  const due = await sql`select 1 from ${sql.table(spec.table)} where status = 'PENDING' and next_attempt_at <= ${nowText} limit 1`.execute(db)
  if (due.rows.length === 0) return []
  const leaseUntil = new Date(now.getTime() + leaseMs).toISOString()
  const lock = dialect === 'postgres' ? sql`for update of d skip locked` : sql``
  const result = await writeStatement(db, sql<Row>`
    update ${sql.table(spec.table)} set lease_until = ${leaseUntil}, attempts = attempts + 1, last_attempt_at = ${nowText}
    where id in (
      select d.id from ${spec.from}
      where d.status = 'PENDING' and d.next_attempt_at <= ${nowText}
        and (d.lease_until is null or d.lease_until <= ${nowText}) ${spec.alsoWhere ?? sql``}
      order by d.next_attempt_at, d.id
      limit ${limit}
      ${lock})
    returning ${spec.returning}`.compile(db))
  return result.rows
}
