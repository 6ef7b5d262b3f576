import { useEffect, useState } from 'preact/hooks'
import type { components } from '../../client/schema.js'
import { api, problemOf, type Problem } from './api.js'
import { date } from './format.js'
import { usePages } from './pages.js'
import { ProblemText } from './problem.js'

type Endpoint = components['schemas']['WebhookEndpoint']
type Delivery = components['schemas']['WebhookDelivery']

const failed = { data: undefined, error: undefined, response: undefined }

/** GET /v1/webhook-endpoints: every endpoint (an administrator's list), with why one was turned off. */
export function WebhooksScreen () {
  const pages = usePages((_all: undefined, cursor) => api.GET('/v1/webhook-endpoints', {
    params: { query: { limit: 20, ...(cursor === undefined ? {} : { cursor }) } }
  }), undefined)
  useEffect(() => { void pages.first(undefined) }, [])
  const endpoints = pages.items

  return (
    <section aria-labelledby='webhooks-title'>
      <h1 id='webhooks-title'>Webhooks</h1>
      <ProblemText problem={pages.problem} />
      {pages.loading && <p aria-live='polite'>Loading…</p>}
      {!pages.loading && pages.problem === undefined && endpoints.length === 0 && <p>No webhook endpoints.</p>}
      <ul class='cards'>
        {endpoints.map((endpoint) => (
          <li key={endpoint.id}>
            <a href={`#/webhooks/${endpoint.id}`}>{endpoint.url}</a>
            <span>{endpoint.enabled ? 'on' : `off: ${endpoint.disabledReason ?? 'turned off'}`} · {endpoint.events.join(', ')}</span>
            {endpoint.description !== '' && <span>{endpoint.description}</span>}
          </li>
        ))}
      </ul>
      {pages.more && <button type='button' onClick={() => { void pages.next() }}>More endpoints</button>}
    </section>
  )
}

const OUTCOME: Record<Delivery['status'], string> = { PENDING: 'pending', SUCCEEDED: 'delivered', FAILED: 'failed' }

function outcome (delivery: Delivery): string {
  const answer = delivery.lastResponseStatus === null ? '' : `, answered ${delivery.lastResponseStatus}`
  const error = delivery.lastError === null ? '' : `: ${delivery.lastError}`
  return `${OUTCOME[delivery.status]} after ${delivery.attempts} attempt${delivery.attempts === 1 ? '' : 's'}${answer}${error}`
}

/** An endpoint: its deliveries, newest first, each redelivered on demand; a ping. */
export function WebhookScreen ({ id }: { id: string }) {
  const [endpoint, setEndpoint] = useState<Endpoint | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const deliveries = usePages((_all: undefined, cursor) => api.GET('/v1/webhook-endpoints/{id}/deliveries', {
    params: { path: { id }, query: { limit: 20, ...(cursor === undefined ? {} : { cursor }) } }
  }), undefined)

  async function read (): Promise<void> {
    const { data, error, response } = await api.GET('/v1/webhook-endpoints/{id}', { params: { path: { id } } }).catch(() => failed)
    if (data === undefined) { setProblem(problemOf(error, response)); return }
    setEndpoint(data)
    await deliveries.first(undefined)
  }
  useEffect(() => { void read() }, [id])

  async function ping (): Promise<void> {
    setProblem(undefined)
    setDone(undefined)
    const { data, error, response } = await api.POST('/v1/webhook-endpoints/{id}/ping', { params: { path: { id } } }).catch(() => failed)
    if (data === undefined) { setProblem(problemOf(error, response)); return }
    setDone(`Ping sent as delivery ${data.id}.`)
    await deliveries.first(undefined)
  }

  async function redeliver (delivery: Delivery): Promise<void> {
    setProblem(undefined)
    setDone(undefined)
    const { data, error, response } = await api.POST('/v1/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver', { params: { path: { id, deliveryId: String(delivery.id) } } }).catch(() => failed)
    if (data === undefined) { setProblem(problemOf(error, response)); return }
    setDone(`Delivery ${delivery.id} is sent again as delivery ${data.id}.`)
    await deliveries.first(undefined)
  }

  return (
    <section aria-labelledby='webhook-title'>
      <h1 id='webhook-title'>{endpoint?.url ?? `Endpoint ${id}`}</h1>
      {endpoint !== undefined && (
        <>
          <dl class='facts'>
            <dt>State</dt><dd>{endpoint.enabled ? 'on' : `off: ${endpoint.disabledReason ?? 'turned off'}`}</dd>
            <dt>Events</dt><dd>{endpoint.events.join(', ')}</dd>
            <dt>Owner</dt><dd>user {endpoint.userId}</dd>
            <dt>Created</dt><dd>{date(endpoint.createdAt)}</dd>
          </dl>
          <div class='actions'><button type='button' onClick={() => { void ping() }}>Ping</button></div>
        </>
      )}
      {done !== undefined && <p role='status'>{done}</p>}
      <ProblemText problem={problem ?? deliveries.problem} />
      <h2>Deliveries</h2>
      {deliveries.loading && problem === undefined && <p aria-live='polite'>Loading…</p>}
      {!deliveries.loading && deliveries.problem === undefined && deliveries.items.length === 0 && <p>No deliveries yet.</p>}
      {deliveries.items.length > 0 && (
        <ul class='cards'>
          {deliveries.items.map((delivery) => (
            <li key={delivery.id} class={delivery.status === 'FAILED' ? 'failed' : undefined}>
              <span>Delivery {delivery.id}: {delivery.eventType}</span>
              <span>{outcome(delivery)}</span>
              <span>{date(delivery.createdAt)}{delivery.nextAttemptAt === null ? '' : `; next attempt ${date(delivery.nextAttemptAt)}`}</span>
              <button type='button' onClick={() => { void redeliver(delivery) }}>Redeliver delivery {delivery.id}</button>
            </li>
          ))}
        </ul>
      )}
      {deliveries.more && <button type='button' onClick={() => { void deliveries.next() }}>More deliveries</button>}
    </section>
  )
}
