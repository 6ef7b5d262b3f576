import { toIso } from '../db/types.js'
import type { WebhookDeliveryType, WebhookEndpointType } from './webhook.schemas.js'
import type { WebhookDeliveryRow, WebhookEndpointRow } from './webhook.table.js'

export function toEndpoint (row: WebhookEndpointRow): WebhookEndpointType {
  return {
    id: row.id,
    userId: row.user_id,
    url: row.url,
    events: JSON.parse(row.event_types) as string[],
    description: row.description,
    enabled: Number(row.enabled) === 1,
    disabledReason: row.disabled_reason,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at)
  }
}

const isoOrNull = (value: Date | string | null): string | null => value === null ? null : toIso(value)
const numberOrNull = (value: bigint | number | null): number | null => value === null ? null : Number(value)

export function toDelivery (row: WebhookDeliveryRow): WebhookDeliveryType {
  const pending = row.status === 'PENDING'
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: pending ? toIso(row.next_attempt_at) : null,
    lastAttemptAt: isoOrNull(row.last_attempt_at),
    lastResponseStatus: numberOrNull(row.last_response_status),
    lastError: row.last_error,
    lastDurationMs: numberOrNull(row.last_duration_ms),
    createdAt: toIso(row.created_at),
    completedAt: isoOrNull(row.completed_at)
  }
}
