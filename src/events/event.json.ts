import { toIso } from '../db/types.js'
import type { EventRow } from './event.table.js'

// An event as the feed and the webhooks send it: `{id, sequence, type, occurredAt,
// resource: {type, id, version}, actor: {userId, apiKeyId}, data}`, `data` absent for a deletion. The representation is
// stored as JSON text when the event is written, so it is spliced in as it is, never parsed.
// A resource's `version` is the sequence of the event: changes of one resource are serialized
// by its row lock, so a later change always has the higher number, and a consumer drops an
// event whose version is lower than one it has applied.

export function eventJson (row: EventRow): string {
  const sequence = String(row.sequence)
  return `{"id":${JSON.stringify(row.event_id)},"sequence":${sequence},"type":${JSON.stringify(row.type)},` +
    `"occurredAt":"${toIso(row.occurred_at)}","resource":{"type":${JSON.stringify(row.resource_type)},` +
    `"id":${String(row.resource_id)},"version":${sequence}},"actor":{"userId":${idOrNull(row.actor_user_id)},"apiKeyId":${idOrNull(row.actor_api_key_id)}}` +
    `${row.data === null ? '' : `,"data":${row.data}`}}`
}

function idOrNull (id: bigint | number | string | null): string {
  return id === null ? 'null' : String(id)
}
