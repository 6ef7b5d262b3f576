import type { Updateable } from 'kysely'
import type { DialectName } from '../db/database.js'
import type { Executor } from '../db/schema.js'
import type { WebhookDeliveryRow, WebhookDeliveryTable, WebhookEndpointRow, WebhookEndpointTable } from './webhook.table.js'

// Webhook endpoints and deliveries in the database. Claims (which instance sends what) are in
// webhooks/delivery-claims.ts.

export interface NewEndpoint {
  userId: bigint
  url: string
  eventTypes: string[]
  description: string
  enabled: boolean
  secret: string
  now: string
}

export async function insertEndpoint (db: Executor, endpoint: NewEndpoint): Promise<WebhookEndpointRow> {
  return await db.insertInto('webhook_endpoints').values({
    user_id: endpoint.userId,
    url: endpoint.url,
    event_types: JSON.stringify(endpoint.eventTypes),
    description: endpoint.description,
    enabled: endpoint.enabled ? 1 : 0,
    secret: endpoint.secret,
    created_at: endpoint.now,
    updated_at: endpoint.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function findEndpoint (db: Executor, id: bigint): Promise<WebhookEndpointRow | undefined> {
  return await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function lockEndpoint (trx: Executor, dialect: DialectName, id: bigint): Promise<WebhookEndpointRow | undefined> {
  const query = trx.selectFrom('webhook_endpoints').selectAll().where('id', '=', id)
  return await (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst()
}

/** Newest first; every endpoint (`owner` undefined) or one user's; `limit` rows before the id `before`. */
export async function listEndpoints (db: Executor, owner: bigint | undefined, limit: number, before: bigint | undefined): Promise<WebhookEndpointRow[]> {
  let query = db.selectFrom('webhook_endpoints').selectAll().orderBy('id', 'desc').limit(limit)
  if (owner !== undefined) query = query.where('user_id', '=', owner)
  if (before !== undefined) query = query.where('id', '<', before)
  return await query.execute()
}

export async function updateEndpoint (db: Executor, id: bigint, set: Updateable<WebhookEndpointTable>): Promise<WebhookEndpointRow> {
  return await db.updateTable('webhook_endpoints').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

export async function deleteEndpoint (db: Executor, id: bigint): Promise<void> {
  await db.deleteFrom('webhook_endpoints').where('id', '=', id).execute()
}

/** The enabled endpoints with their owners' roles: the targets of a fan-out. */
export async function enabledEndpoints (db: Executor): Promise<Array<WebhookEndpointRow & { role: string }>> {
  return await db.selectFrom('webhook_endpoints')
    .innerJoin('users', 'users.id', 'webhook_endpoints.user_id')
    .selectAll('webhook_endpoints').select('users.role')
    .where('webhook_endpoints.enabled', '=', 1)
    .orderBy('webhook_endpoints.id')
    .execute()
}

export interface NewDelivery {
  endpointId: bigint
  eventId: string
  eventType: string
  payload: string
  now: string
}

export async function insertDeliveries (db: Executor, deliveries: NewDelivery[]): Promise<WebhookDeliveryRow[]> {
  if (deliveries.length === 0) return []
  return await db.insertInto('webhook_deliveries').values(deliveries.map((d) => ({
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType,
    payload: d.payload,
    status: 'PENDING' as const,
    attempts: 0,
    next_attempt_at: d.now,
    created_at: d.now
  }))).returningAll().execute()
}

export async function findDelivery (db: Executor, endpointId: bigint, id: bigint): Promise<WebhookDeliveryRow | undefined> {
  return await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).where('endpoint_id', '=', endpointId).executeTakeFirst()
}

export async function listDeliveries (db: Executor, endpointId: bigint, limit: number, before: bigint | undefined): Promise<WebhookDeliveryRow[]> {
  let query = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('id', 'desc').limit(limit)
  if (before !== undefined) query = query.where('id', '<', before)
  return await query.execute()
}

export async function updateDelivery (db: Executor, id: bigint, set: Updateable<WebhookDeliveryTable>): Promise<void> {
  await db.updateTable('webhook_deliveries').set(set).where('id', '=', id).execute()
}

