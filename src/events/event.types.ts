// The kinds of event, who may read each, and the resource each is about (docs/events.md).

export const EVENT_TYPES = [
  'user.created', 'user.updated', 'user.deleted',
  'post.created', 'post.updated', 'post.deleted',
  'product.created', 'product.updated',
  'order.created', 'order.canceled', 'order.shipped',
  'webhook_endpoint.disabled',
  'api_key.created', 'api_key.revoked'
] as const

export type EventType = typeof EVENT_TYPES[number]

/** The event a webhook endpoint receives when asked to test itself; never in the feed. */
export const PING_TYPE = 'webhook.ping'

export type ResourceType = 'user' | 'post' | 'product' | 'order' | 'webhook_endpoint' | 'api_key'

export function resourceTypeOf (type: EventType): ResourceType {
  return type.slice(0, type.indexOf('.')) as ResourceType
}

export function isEventType (value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value)
}
