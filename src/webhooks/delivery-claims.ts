import { sql } from 'kysely'
import { writeStatement } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { anyDue } from './webhook.repository.js'

// Which instance sends which delivery. A claim takes due deliveries and leases them: their
// attempt count goes up and `lease_until` keeps every other claim off them until the attempt
// is finished or, if the instance died mid-send, the lease runs out and the next claim retries
// it (at least once). On PostgreSQL several instances claim at once, each skipping the rows
// another is claiming (FOR UPDATE SKIP LOCKED); on SQLite one statement is atomic under the
// database's write lock.

export interface ClaimedDelivery {
  id: bigint
  endpoint_id: bigint
  event_id: string
  event_type: string
  payload: string
  attempts: bigint
}

export async function claimDeliveries (db: Db, dialect: DialectName, limit: number, now: Date, leaseMs: number): Promise<ClaimedDelivery[]> {
  const nowText = now.toISOString()
  if (limit <= 0 || !await anyDue(db, nowText)) return []
  const leaseUntil = new Date(now.getTime() + leaseMs).toISOString()
  const lock = dialect === 'postgres' ? sql`for update of d skip locked` : sql``
  const result = await writeStatement(db, sql<ClaimedDelivery>`
    update webhook_deliveries set lease_until = ${leaseUntil}, attempts = attempts + 1, last_attempt_at = ${nowText}
    where id in (
      select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where d.status = 'PENDING' and d.next_attempt_at <= ${nowText}
        and (d.lease_until is null or d.lease_until <= ${nowText}) and e.enabled = 1
      order by d.next_attempt_at, d.id
      limit ${limit}
      ${lock})
    returning id, endpoint_id, event_id, event_type, payload, attempts`.compile(db))
  return result.rows.map((row) => ({ ...row, id: BigInt(row.id), endpoint_id: BigInt(row.endpoint_id), attempts: BigInt(row.attempts) }))
}
