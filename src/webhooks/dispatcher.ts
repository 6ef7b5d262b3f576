import { sql } from 'kysely'
import { SERVICE_ACTOR } from '../events/actor.js'
import type { Dispatcher } from 'undici'
import type { Config } from '../config/config.js'
import type { DialectName } from '../db/database.js'
import type { Notifications } from '../db/notifications.js'
import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import { nowIso } from '../db/types.js'
import { DeliveryLoop, type BackgroundLog } from '../background/delivery-loop.js'
import { nextAttemptAt } from '../background/retry.js'
import { onEventsCommitted } from '../events/committed.js'
import { eventJson } from '../events/event.json.js'
import { eventsAfter, eventsToFanOut, lastNumberedAfter, setFanOutMark, lockEventLog, numberEvents, pruneEvents, recordEvent } from '../events/event.repository.js'
import type { EventRow } from '../events/event.table.js'
import { attemptDelivery, type AttemptResult } from './delivery-attempt.js'
import { claimDeliveries, type ClaimedDelivery } from './delivery-claims.js'
import { deliveryAgent } from './target-guard.js'
import { toEndpoint } from './webhook.representation.js'
import { enabledEndpoints, findEndpoint, insertDeliveries, lockEndpoint, updateDelivery, updateEndpoint, type NewDelivery } from './webhook.repository.js'
import { ALL_EVENTS } from './webhook.schemas.js'
import type { WebhookEndpointRow } from './webhook.table.js'

// The dispatcher runs inside every instance of the service (docs/events.md), on the loop every
// background delivery shares (background/delivery-loop.ts). Each round it:
// 1. numbers committed events (PostgreSQL; events/event.repository.ts);
// 2. fans new events out into deliveries, one row per event and matching endpoint, under the
//    event log's row lock, so that each event is fanned out once whichever instance does it;
// 3. claims due deliveries (webhooks/delivery-claims.ts) and sends them, a few at a time;
// 4. once an hour, prunes events and deliveries past the retention period.
// A round starts when this instance commits an event, when another instance announces new
// deliveries (PostgreSQL NOTIFY), when an attempt finishes, and on a short poll.

const CHANNEL = 'webhook_deliveries'
const FAN_OUT_BATCH = 500
const MAX_IN_FLIGHT = 8
const PRUNE_EVERY_MS = 60 * 60 * 1000
/** A claimed attempt is another instance's to retry once this long has passed beyond its time limit. */
const LEASE_MARGIN_MS = 5000

export interface DispatcherOptions {
  db: Db
  dialect: DialectName
  config: Config
  log: BackgroundLog
  /** PostgreSQL: other instances' announcements of new deliveries. */
  notifications?: Notifications
}

/** An enabled endpoint as the fan-out reads it; `since` is its registration, in ms. */
interface Endpoint { row: WebhookEndpointRow, types: Set<string>, admin: boolean, since: number }

/** `occurredAt` is the event's `occurred_at` in ms, read once for all the endpoints. */
function receives (endpoint: Endpoint, event: EventRow, occurredAt: number): boolean {
  if (!endpoint.types.has(ALL_EVENTS) && !endpoint.types.has(event.type)) return false
  // An endpoint receives what occurs from its registration on. An event that occurred before
  // it, but was not fanned out yet (the round after its commit had not run), is not its own.
  if (occurredAt < endpoint.since) return false
  return endpoint.admin || event.audience === null || event.audience === endpoint.row.user_id
}

export class WebhookDispatcher {
  readonly #db: Db
  readonly #dialect: DialectName
  readonly #config: Config
  readonly #log: BackgroundLog
  /** The guarded connection agent, made with the first delivery. */
  #agent: Promise<Dispatcher> | undefined
  readonly #loop: DeliveryLoop<ClaimedDelivery>
  #lastPrune = 0

  constructor (options: DispatcherOptions) {
    this.#db = options.db
    this.#dialect = options.dialect
    this.#config = options.config
    this.#log = options.log
    const { timeoutMs, pollMs } = options.config.webhooks
    this.#loop = new DeliveryLoop<ClaimedDelivery>({
      name: 'webhook delivery',
      log: options.log,
      pollMs,
      maxInFlight: MAX_IN_FLIGHT,
      round: async () => { await this.#round() },
      claim: async (free) => await claimDeliveries(this.#db, this.#dialect, free, new Date(), timeoutMs + LEASE_MARGIN_MS),
      send: async (delivery, signal) => { await this.#send(delivery, signal) },
      wakeOn: (wake) => onEventsCommitted(options.db, wake),
      notifications: { channel: CHANNEL, hub: options.notifications }
    })
  }

  start (): void {
    this.#loop.start()
  }

  wake (): void {
    this.#loop.wake()
  }

  /** A round's own work before its claim: numbering, fan-out, and once an hour the pruning. */
  async #round (): Promise<void> {
    await numberEvents(this.#db)
    const fanned = await this.#fanOut()
    if (fanned > 0 && this.#dialect === 'postgres') await sql`select pg_notify(${CHANNEL}, '')`.execute(this.#db)
    if (Date.now() - this.#lastPrune >= PRUNE_EVERY_MS) {
      this.#lastPrune = Date.now()
      await pruneEvents(this.#db, this.#config.eventRetentionDays * 24 * 60 * 60 * 1000)
    }
  }

  /** Makes deliveries of the events not fanned out yet; returns how many. */
  async #fanOut (): Promise<number> {
    let total = 0
    for (;;) {
      // A look without the lock first: nearly every round has nothing new.
      if (!await eventsToFanOut(this.#db)) return total
      const { made, full } = await write(this.#db, async (trx) => {
        const locked = await lockEventLog(trx)
        // The events are bounded before the endpoints are read: an endpoint registered after
        // this look is certain to be read for every event numbered after it (an event numbered
        // between the endpoints' read and the events' would otherwise miss a new endpoint).
        const through = await lastNumberedAfter(trx, locked.fannedOutThrough)
        if (through === undefined) return { made: 0, full: false }
        const endpoints: Endpoint[] = (await enabledEndpoints(trx)).map((row) => ({
          row, types: new Set(JSON.parse(row.event_types) as string[]), admin: row.role === 'ADMIN', since: new Date(row.created_at).getTime()
        }))
        if (endpoints.length === 0) {
          // Nobody to deliver to: the mark moves past these events without reading them (an
          // endpoint receives the events that come after it, not the ones before).
          await setFanOutMark(trx, through)
          return { made: 0, full: false }
        }
        const events = await eventsAfter(trx, locked.fannedOutThrough, through, FAN_OUT_BATCH)
        if (events.length === 0) return { made: 0, full: false }
        const now = nowIso()
        const deliveries: NewDelivery[] = []
        for (const event of events) {
          const occurredAt = new Date(event.occurred_at).getTime()
          const targets = endpoints.filter((endpoint) => receives(endpoint, event, occurredAt))
          if (targets.length === 0) continue
          const payload = eventJson(event)
          for (const endpoint of targets) deliveries.push({ endpointId: endpoint.row.id, eventId: event.event_id, eventType: event.type, payload, now })
        }
        for (let i = 0; i < deliveries.length; i += 100) await insertDeliveries(trx, deliveries.slice(i, i + 100))
        await setFanOutMark(trx, events[events.length - 1]!.sequence)
        return { made: deliveries.length, full: events.length === FAN_OUT_BATCH }
      })
      total += made
      if (!full) return total
    }
  }

  async #send (delivery: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const endpoint = await findEndpoint(this.#db, delivery.endpoint_id)
    if (endpoint === undefined) return
    const secrets = [endpoint.secret]
    const previousUntil = endpoint.previous_secret_expires_at
    if (endpoint.previous_secret !== null && previousUntil !== null && new Date(previousUntil).getTime() > Date.now()) secrets.push(endpoint.previous_secret)
    this.#agent ??= deliveryAgent({ allowHosts: this.#config.webhooks.allowHosts })
    const result = await attemptDelivery({ url: endpoint.url, secrets }, delivery.event_id, delivery.payload, {
      dispatcher: await this.#agent, timeoutMs: this.#config.webhooks.timeoutMs, signal
    })
    await this.#record(delivery, result)
  }

  /** Records an attempt's outcome: done, retried later, or given up; and the endpoint's health. */
  async #record (delivery: ClaimedDelivery, result: AttemptResult): Promise<void> {
    const now = new Date()
    const nowText = now.toISOString()
    const last = {
      lease_until: null,
      last_response_status: result.status ?? null,
      last_error: result.error ?? null,
      last_duration_ms: result.durationMs
    }
    if (result.aborted) {
      // Not the endpoint's fault: sent again as soon as an instance is running.
      await write(this.#db, async (trx) => { await updateDelivery(trx, delivery.id, { ...last, next_attempt_at: nowText }) })
      return
    }
    if (result.ok) {
      await write(this.#db, async (trx) => {
        await updateDelivery(trx, delivery.id, { ...last, status: 'SUCCEEDED', completed_at: nowText })
        await trx.updateTable('webhook_endpoints').set({ failing_since: null })
          .where('id', '=', delivery.endpoint_id).where('failing_since', 'is not', null).execute()
      })
      return
    }
    const { retryScheduleMs, disableAfterMs } = this.#config.webhooks
    await write(this.#db, async (trx) => {
      const endpoint = await lockEndpoint(trx, this.#dialect, delivery.endpoint_id)
      if (endpoint === undefined) return
      const failingSince = endpoint.failing_since === null ? now : new Date(endpoint.failing_since)
      const reason = result.status === 410
        ? 'The endpoint answered 410 Gone.'
        : now.getTime() - failingSince.getTime() >= disableAfterMs
          ? `Every delivery failed for ${Math.round(disableAfterMs / 3_600_000)} hours or more.`
          : undefined
      const next = nextAttemptAt(retryScheduleMs, Number(delivery.attempts), now, result.retryAfterSeconds)
      if (reason !== undefined || next === undefined) {
        await updateDelivery(trx, delivery.id, { ...last, status: 'FAILED', completed_at: nowText })
      } else {
        await updateDelivery(trx, delivery.id, { ...last, next_attempt_at: next.toISOString() })
      }
      if (reason !== undefined && Number(endpoint.enabled) === 1) {
        const disabled = await updateEndpoint(trx, endpoint.id, { enabled: 0, disabled_reason: reason, failing_since: null, updated_at: nowText })
        await recordEvent(trx, { type: 'webhook_endpoint.disabled', resourceId: endpoint.id, audience: endpoint.user_id, data: toEndpoint(disabled), actor: SERVICE_ACTOR }, nowText)
        this.#log.info({ endpointId: endpoint.id.toString(), reason }, 'webhook endpoint disabled')
      } else if (endpoint.failing_since === null) {
        await updateEndpoint(trx, endpoint.id, { failing_since: nowText })
      }
    })
  }

  async stop (): Promise<void> {
    await this.#loop.stop()
    const agent = await this.#agent?.catch(() => undefined)
    await agent?.close().catch(() => {})
  }
}
