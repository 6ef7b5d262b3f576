import type { components } from '../../client/schema.js'
import { api } from './api.js'

// The live event stream in a page: EventSource cannot send the token, so each connection is
// opened with a stream ticket (POST /v1/events/stream-tickets). EventSource reconnects by itself
// (sending Last-Event-ID) after a dropped connection; once it gives up, its ticket expired or the
// service refused it, a new ticket opens a new stream from the last sequence seen, so nothing is
// missed and nothing shown twice.

export type FeedEvent = components['schemas']['Event']
export type EventType = FeedEvent['type']

export const EVENT_TYPES: readonly EventType[] = [
  'order.created', 'order.canceled', 'order.shipped',
  'product.created', 'product.updated',
  'post.created', 'post.updated', 'post.deleted',
  'user.created', 'user.updated', 'user.deleted',
  'webhook_endpoint.disabled', 'api_key.created', 'api_key.revoked'
]

export type LiveState = 'connecting' | 'live' | 'retrying'

/**
 * Follows the feed's events of `types` (one type is filtered by the service; several, by the
 * listeners) from the moment the stream opens. `onState` says when the stream is open, which is
 * when a screen may read its list without missing what follows. Returns the function that stops.
 */
export function follow (types: readonly EventType[], onEvent: (event: FeedEvent) => void, onState: (state: LiveState) => void): () => void {
  let source: EventSource | undefined
  let last: number | undefined
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined

  const retry = (ms: number): void => {
    onState('retrying')
    timer = setTimeout(() => { void open() }, ms)
  }

  async function open (): Promise<void> {
    const { data } = await api.POST('/v1/events/stream-tickets').catch(() => ({ data: undefined }))
    if (stopped) return
    if (data === undefined) { retry(5000); return }
    const query = new URLSearchParams({ ticket: data.ticket })
    if (types.length === 1) query.set('type', types[0]!)
    if (last !== undefined) query.set('after', String(last))
    const opened = source = new EventSource(`/v1/events?${query.toString()}`)
    opened.addEventListener('open', () => { onState('live') })
    for (const type of types) {
      opened.addEventListener(type, (message) => {
        const event = JSON.parse((message as MessageEvent<string>).data) as FeedEvent
        last = event.sequence
        onEvent(event)
      })
    }
    opened.addEventListener('error', () => {
      if (stopped) return
      if (opened.readyState === EventSource.CLOSED) retry(1000)
      else onState('retrying')
    })
  }

  onState('connecting')
  void open()
  return () => {
    stopped = true
    clearTimeout(timer)
    source?.close()
  }
}
