import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface EventTable {
  id: GeneratedId
  /** The public id (`evt_…`), also the webhook-id of its deliveries. */
  event_id: string
  /** The feed's order; NULL on PostgreSQL until the sequencer numbers the committed event. */
  sequence: Int | null
  type: string
  occurred_at: Timestamp
  resource_type: string
  resource_id: Int
  /** NULL: every user may read it; else the one user who may (administrators read every event). */
  audience: Int | null
  /** The resource's representation after the change, as JSON text; NULL for a deletion. */
  data: string | null
}

export interface EventLogTable {
  id: number
  pruned_through: Int
  fanned_out_through: Int
}

export type EventRow = Selectable<EventTable>
