import { sql } from 'kysely'
import { claimDue, type ClaimSpec } from '../background/claims.js'
import type { DialectName } from '../db/database.js'
import type { Db } from '../db/schema.js'

// Which instance sends which delivery: the claim of every outbox (background/claims.ts), over
// the deliveries of enabled endpoints.

export interface ClaimedDelivery {
  id: bigint
  endpoint_id: bigint
  event_id: string
  event_type: string
  payload: string
  attempts: bigint
}

const DELIVERIES: ClaimSpec = {
  table: 'webhook_deliveries',
  from: sql`webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id`,
  // A disabled endpoint's deliveries wait for it to be enabled again.
  alsoWhere: sql`and e.enabled = 1`,
  returning: sql`id, endpoint_id, event_id, event_type, payload, attempts`
}

export async function claimDeliveries (db: Db, dialect: DialectName, limit: number, now: Date, leaseMs: number): Promise<ClaimedDelivery[]> {
  const rows = await claimDue<ClaimedDelivery>(db, dialect, DELIVERIES, limit, now, leaseMs)
  return rows.map((row) => ({ ...row, id: BigInt(row.id), endpoint_id: BigInt(row.endpoint_id), attempts: BigInt(row.attempts) }))
}
