import { useEffect, useState } from 'preact/hooks'
import { date } from './format.js'
import { EVENT_TYPES, follow, type EventType, type FeedEvent, type LiveState } from './live.js'
import { LiveStatus } from './live-status.js'

const KEPT = 200

function actor (event: FeedEvent): string {
  if (event.actor.apiKeyId !== null) return `user ${event.actor.userId ?? '?'} with API key ${event.actor.apiKeyId}`
  if (event.actor.userId !== null) return `user ${event.actor.userId}`
  return 'the service'
}

/** The feed as it happens (the live stream), newest first, the last 200 kept; one type or all. */
export function EventsScreen () {
  const [type, setType] = useState<EventType | ''>('')
  const [events, setEvents] = useState<FeedEvent[]>([])
  const [live, setLive] = useState<LiveState>('connecting')

  useEffect(() => {
    setEvents([])
    return follow(type === '' ? EVENT_TYPES : [type], (event) => {
      setEvents((earlier) => [event, ...earlier].slice(0, KEPT))
    }, setLive)
  }, [type])

  return (
    <section aria-labelledby='events-title'>
      <h1 id='events-title'>Events</h1>
      <form onSubmit={(event) => { event.preventDefault() }}>
        <label for='event-type'>Type</label>
        <select id='event-type' value={type} onChange={(event) => { setType((event.target as HTMLSelectElement).value as EventType | '') }}>
          <option value=''>Every type</option>
          {EVENT_TYPES.map((name) => <option key={name} value={name}>{name}</option>)}
        </select>
      </form>
      <LiveStatus state={live} what='events appear here as they are committed' />
      {events.length === 0 && <p>No events since this screen opened.</p>}
      <ul class='cards' aria-label='Events, newest first'>
        {events.map((event) => (
          <li key={event.id}>
            <span><strong>{event.type}</strong> · {event.resource.type} {event.resource.id}</span>
            <span>by {actor(event)} · {date(event.occurredAt)} · sequence {event.sequence}</span>
          </li>
        ))}
      </ul>
    </section>
  )
}
