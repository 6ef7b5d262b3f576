import { Type, type Static } from '@sinclair/typebox'
import { EventId } from '../events/event.schemas.js'
import { EVENT_TYPES, PING_TYPE } from '../events/event.types.js'
import { Id, IdString, named, ReadOnly, Timestamp, WELL_FORMED } from '../http/schemas.js'

// Webhook endpoints and their deliveries (docs/events.md).

export const ALL_EVENTS = '*'

// The examples use example.com, whose name resolves to public addresses: sent as published, with
// the default configuration, they are accepted (a made-up host name would be 400 on `url`).
export const EndpointUrl = Type.String({
  format: 'uri',
  maxLength: 2048,
  description: 'Where deliveries are POSTed: an https URL on a public address (http and private addresses only for hosts the operator allows).',
  examples: ['https://example.com/hooks/resource-api']
})
export const EndpointEvents = Type.Array(Type.Unsafe<string>({ type: 'string', enum: [ALL_EVENTS, ...EVENT_TYPES] }), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  description: `The event types to deliver, or ["*"] for every type the owner may read: ${EVENT_TYPES.join(', ')}.`,
  examples: [['order.created', 'order.canceled']]
})
export const EndpointDescription = Type.String({ maxLength: 500, pattern: WELL_FORMED, 'x-well-formed': true, description: 'A note for people, at most 500 characters.', examples: ['Warehouse'] })
export const EndpointEnabled = Type.Boolean({ description: 'Whether events are delivered. Enabling again clears the reason it was disabled.' })

const readOnlyMembers = {
  id: ReadOnly('The endpoint id.'),
  userId: ReadOnly('The owner.'),
  disabledReason: ReadOnly('Why the service disabled it.'),
  createdAt: ReadOnly('Creation time.'),
  updatedAt: ReadOnly('Time of the last change.')
}

export const WebhookEndpointCreateBody = named('WebhookEndpointCreateRequest', Type.Object({
  url: EndpointUrl,
  events: Type.Optional({ ...EndpointEvents, description: `${EndpointEvents.description} Default ["*"].` }),
  description: Type.Optional(EndpointDescription),
  enabled: Type.Optional({ ...EndpointEnabled, description: 'Whether events are delivered. Default true.' }),
  ...readOnlyMembers
}, {
  additionalProperties: false,
  description: 'A new webhook endpoint.',
  examples: [{ url: 'https://example.com/hooks/resource-api', events: ['order.created', 'order.canceled'], description: 'Warehouse' }]
}))

export const WRITABLE_MEMBERS = ['url', 'events', 'description', 'enabled'] as const

export const WebhookEndpointPatchBody = named('WebhookEndpointPatchRequest', Type.Object({
  url: Type.Optional(EndpointUrl),
  events: Type.Optional(EndpointEvents),
  description: Type.Optional(EndpointDescription),
  enabled: Type.Optional(EndpointEnabled),
  ...readOnlyMembers
}, {
  additionalProperties: false,
  anyOf: WRITABLE_MEMBERS.map((member) => ({ required: [member] })),
  description: `Some of ${WRITABLE_MEMBERS.join(', ')}; at least one.`,
  examples: [{ enabled: true }]
}))

const endpointProperties = {
  id: Id,
  userId: Id,
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.String(),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the service disabled the endpoint (410 Gone, or failing too long); null otherwise.' }),
  createdAt: Timestamp,
  updatedAt: Timestamp
}
const endpointExample = { id: 5, userId: 42, url: 'https://example.com/hooks/resource-api', events: ['order.created', 'order.canceled'], description: 'Warehouse', enabled: true, disabledReason: null, createdAt: '2026-11-21T16:30:00.000Z', updatedAt: '2026-11-21T16:30:00.000Z' }

export const WebhookEndpoint = named('WebhookEndpoint', Type.Object(endpointProperties, {
  description: 'A webhook endpoint. An administrator\'s receives every event; a user\'s, the events the user may read in the feed.',
  examples: [endpointExample]
}))
export type WebhookEndpointType = Static<typeof WebhookEndpoint>

export const Secret = Type.String({ description: 'The signing secret (Standard Webhooks): `whsec_` and 24 bytes in base64, shown only here. Keep it on the receiver to verify `webhook-signature`.', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] })

export const WebhookEndpointWithSecret = named('WebhookEndpointWithSecret', Type.Object({ ...endpointProperties, secret: Secret }, {
  description: 'A webhook endpoint with its signing secret, shown once: when it is created and when the secret is rotated.',
  examples: [{ ...endpointExample, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }]
}))

export const DELIVERY_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const

export const WebhookDelivery = named('WebhookDelivery', Type.Object({
  id: Id,
  endpointId: Id,
  eventId: EventId,
  eventType: Type.Unsafe<string>({ type: 'string', enum: [...EVENT_TYPES, PING_TYPE] }),
  status: Type.Unsafe<string>({ type: 'string', enum: [...DELIVERY_STATUSES], description: 'PENDING (to be sent, or retried at `nextAttemptAt`), SUCCEEDED (a 2xx answer), FAILED (no attempts left, the endpoint answered 410, or it was disabled).' }),
  attempts: Type.Integer({ minimum: 0, description: 'Attempts made so far.' }),
  nextAttemptAt: Type.Union([Timestamp, Type.Null()], { description: 'When the next attempt is due; null once finished.' }),
  lastAttemptAt: Type.Union([Timestamp, Type.Null()]),
  lastResponseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status of the last answer; null when there was none.' }),
  lastError: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed: the status, a time-out, a refused address, a connection error; null after a success.' }),
  lastDurationMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'How long the last attempt took, in milliseconds.' }),
  createdAt: Timestamp,
  completedAt: Type.Union([Timestamp, Type.Null()])
}, {
  description: 'One event sent to one endpoint, with its attempts.',
  examples: [{ id: 17, endpointId: 5, eventId: 'evt_3q2-7xWm0aZ5vLk8pQnRtY', eventType: 'order.created', status: 'SUCCEEDED', attempts: 1, nextAttemptAt: null, lastAttemptAt: '2026-11-21T16:30:00.120Z', lastResponseStatus: 200, lastError: null, lastDurationMs: 48, createdAt: '2026-11-21T16:30:00.100Z', completedAt: '2026-11-21T16:30:00.168Z' }]
}))
export type WebhookDeliveryType = Static<typeof WebhookDelivery>

export const DeliveryParams = Type.Object({ id: IdString(), deliveryId: IdString('A delivery id: a decimal integer from 1 to 9223372036854775807.') })
