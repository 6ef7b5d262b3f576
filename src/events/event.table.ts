import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface EventTable {
  id: GeneratedId
  /** The public id (`evt_…`), also the webhook-id of its deliveries. */
  event_id: string
  type: string
  occurred_at: Timestamp
  resource_type: string
  resource_id: Int
  /** NULL: every user may read it; else the one user who may (administrators read every event). */
  audience: Int | null
  /** The resource's representation after the change, as JSON text; NULL for a deletion. */
  data: string | null
  /** Who made the change (events/actor.ts): the user, NULL for the service's own changes. */
  actor_user_id: Int | null
  /** The API key the change was made with, NULL for any other credential. */
  actor_api_key_id: Int | null
}

/** The feed's order: an event's number, given as it commits (event.repository.ts); on SQLite a view of the events, each one's number its key. */
export interface EventFeedTable {
  sequence: Int
  /** events.id */
  event_pk: Int
  /** events.audience, copied so the feed is filtered before an event row is read. */
  audience: Int | null
}

/** PostgreSQL: the events written but not numbered yet (each one's events.id). */
export interface EventPendingTable {
  event_pk: Int
  /** events.audience, carried to event_feed: the numbering reads no event row. */
  audience: Int | null
}

export interface EventLogTable {
  id: number
  pruned_through: Int
  fanned_out_through: Int
}

/** An event with its place in the feed, as the feed and the fan-out read it. */
export type EventRow = Omit<Selectable<EventTable>, 'id'> & Pick<Selectable<EventFeedTable>, 'sequence'>
