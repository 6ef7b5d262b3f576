import type { Selectable } from 'kysely'
import type { Flag, GeneratedId, Int, Timestamp } from '../db/types.js'

export interface WebhookEndpointTable {
  id: GeneratedId
  user_id: Int
  url: string
  description: string
  /** JSON array of event types, or ["*"]. */
  event_types: string
  enabled: Flag
  disabled_reason: string | null
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Timestamp | null
  failing_since: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED'

export interface WebhookDeliveryTable {
  id: GeneratedId
  endpoint_id: Int
  event_id: string
  event_type: string
  payload: string
  status: DeliveryStatus
  attempts: Int
  next_attempt_at: Timestamp
  lease_until: Timestamp | null
  last_attempt_at: Timestamp | null
  last_response_status: Int | null
  last_error: string | null
  last_duration_ms: Int | null
  created_at: Timestamp
  completed_at: Timestamp | null
}

export type WebhookEndpointRow = Selectable<WebhookEndpointTable>
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>
