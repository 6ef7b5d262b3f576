import { Type, type TSchema } from '@sinclair/typebox'
import { Id, named, ref, Timestamp } from '../http/schemas.js'
import { EVENT_TYPES, PING_TYPE, resourceTypeOf, type EventType, type ResourceType } from './event.types.js'

// Every event type as a named schema (components.schemas, and the document's `webhooks`),
// so a generated client has a type per event and can narrow on `type`.

export const EventId = Type.String({ description: 'The event\'s id (`evt_` and 22 characters); also the `webhook-id` of its deliveries, the key to drop a duplicate delivery.', examples: ['evt_3q2-7xWm0aZ5vLk8pQnRtY'] })
export const Sequence = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The event\'s place in the feed: strictly increasing in commit order, with no gaps a reader can see.', examples: [1042] })

// The representation each resource's events carry, named by its `$id` (defined by its feature,
// which this file does not import: the events stand below the features that record them, and
// the names resolve wherever the named schemas are added, components.ts).
const DATA: Record<ResourceType, string> = {
  user: 'UserAccount',
  post: 'Post',
  product: 'Product',
  order: 'Order',
  webhook_endpoint: 'WebhookEndpoint',
  api_key: 'ApiKey'
}

const DESCRIPTIONS: Record<EventType, string> = {
  'user.created': 'An account was created. Seen by the user and administrators.',
  'user.updated': 'An account changed: its name, its e-mail address (a new one asked for, then proved), or its address was verified. Seen by the user and administrators.',
  'user.deleted': 'An account was deleted, with its sessions, posts and orders (each post also has its post.deleted). Seen by the user and administrators.',
  'post.created': 'A post was created. Seen by every user.',
  'post.updated': 'A post\'s title or content changed (views do not make events). Seen by every user.',
  'post.deleted': 'A post was deleted, by its author or with the author\'s account. Seen by every user.',
  'product.created': 'A product was created. Seen by every user.',
  'product.updated': 'A product changed: by an administrator, or its stock by an order placed or canceled. Seen by every user.',
  'order.created': 'An order was placed (PAID). Seen by the ordering user and administrators.',
  'order.canceled': 'An order was canceled; its units went back to stock. Seen by the ordering user and administrators.',
  'order.shipped': 'An order was shipped. Seen by the ordering user and administrators.',
  'webhook_endpoint.disabled': 'A webhook endpoint was disabled by the service: it answered 410 Gone, or every delivery failed for too long. Seen by the endpoint\'s owner and administrators.',
  'api_key.created': 'An API key was created (its prefix, never its secret). Seen by the key\'s owner and administrators.',
  'api_key.revoked': 'An API key was revoked by its owner, or ended by the service when the account was handed over (a password reset first proving its address, or ADMIN_EMAIL naming it) (`data` is the key as it was). Seen by the key\'s owner and administrators.'
}

export function eventSchemaName (type: string): string {
  return type.split(/[._]/).map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('') + 'Event'
}

export const EventActor = named('EventActor', Type.Object({
  userId: Type.Union([Id, Type.Null()], { description: 'The user who made the change (an administrator acting on another\'s resource is named here), or null for the service\'s own changes.' }),
  apiKeyId: Type.Union([Id, Type.Null()], { description: 'The API key the change was made with, or null (a log-in token, a mailed link, the service).' })
}, { additionalProperties: false, description: 'Who made the change. A sign-up and a change made through a mailed link are the account\'s own; both null for the service\'s own changes (an administrator made at start-up, an endpoint disabled after its failures) and for events recorded before actors were.', examples: [{ userId: 1, apiKeyId: null }] }))

function eventSchema (type: EventType): TSchema {
  const resourceType = resourceTypeOf(type)
  const deletion = type.endsWith('.deleted')
  return named(eventSchemaName(type), Type.Object({
    id: EventId,
    sequence: Sequence,
    type: Type.Literal(type),
    occurredAt: Timestamp,
    resource: Type.Object({
      type: Type.Literal(resourceType),
      id: Id,
      version: Type.Integer({ minimum: 1, description: 'Grows with every change of the resource: an event with a lower version than one already applied is stale.' })
    }, { additionalProperties: false }),
    actor: ref(EventActor),
    ...(deletion ? {} : { data: Type.Unsafe({ $ref: DATA[resourceType], description: 'The resource as its owner reads it after the change.' }) })
  }, { additionalProperties: false, description: DESCRIPTIONS[type] }))
}

export const eventSchemas = EVENT_TYPES.map(eventSchema)

export const PingEvent = named('WebhookPingEvent', Type.Object({
  id: EventId,
  type: Type.Literal(PING_TYPE),
  occurredAt: Timestamp,
  resource: Type.Object({ type: Type.Literal('webhook_endpoint'), id: Id }, { additionalProperties: false })
}, { additionalProperties: false, description: 'A test delivery asked for with POST /v1/webhook-endpoints/{id}/ping; never in the feed.' }))

/** Any event of the feed. */
export const Event = named('Event', Type.Union(eventSchemas.map((schema) => Type.Unsafe({ $ref: schema.$id! })), {
  description: 'An event: `{id, sequence, type, occurredAt, resource: {type, id, version}, actor: {userId, apiKeyId}, data}`; `data` is absent for a deletion.'
}))

export const EventTypeSchema = Type.Unsafe<EventType>({ type: 'string', enum: [...EVENT_TYPES], description: `One of ${EVENT_TYPES.join(', ')}.` })
