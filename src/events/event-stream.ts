import type { FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { DialectName } from '../db/database.js'
import type { Notifications } from '../db/notifications.js'
import type { Db } from '../db/schema.js'
import { ApiError } from '../http/errors.js'
import { onCredentialsRevoked, type Revocation } from '../auth/revocations.js'
import { CoalescedTask } from './coalesced-task.js'
import { onEventsCommitted } from './committed.js'
import { eventJson } from './event.json.js'
import { lastNumberedAfter, latestEvents, listEvents, numberEvents, EVENTS_CHANNEL } from './event.repository.js'
import type { EventRow } from './event.table.js'

// The feed as a live Server-Sent Events stream (docs/events.md): GET /v1/events with
// `Accept: text/event-stream`.
//
// One hub per instance reads the feed's new events once for every stream: when an event commits
// here, when another instance announces events it numbered (PostgreSQL NOTIFY on `events`), and
// every second (a lost announcement delays, never loses). It keeps the newest RING events in
// memory, of every audience. Each stream has a position, the last sequence it has been brought
// past; it is served from the ring when the ring holds everything after its position, and from
// the database (its own feed: audience and type filters) when it is further behind: a stream
// that opens with an old Last-Event-ID reads its backlog page by page, then joins the live
// events, with no gap and no duplicate across the switch (the position moves only forward, over
// events sent or not visible to it).
//
// Ends: a stream's credential is checked again every CHECK_MS (so one logged out, revoked or
// expired, or an account deleted, ends the stream within seconds on every instance; at once
// on this one when it happens here) and at its expiry; a reader that stops reading is dropped
// once BUFFER_LIMIT bytes wait for it; at shutdown every stream ends cleanly, so that browsers
// reconnect (with Last-Event-ID) to another instance or to the restarted one.

const RING = 2000
const PAGE = 100
/** Idle streams get a comment this often (proxies and browsers drop a silent connection). */
export const HEARTBEAT_MS = 15_000
/** How often a stream's credential is checked again. */
export const CHECK_MS = 10_000
/** A reader that stops reading is dropped once this much waits for it. */
export const BUFFER_LIMIT = 1024 * 1024
export const STREAMS_PER_USER = 10
export const STREAMS_PER_PROCESS = 10_000
/** The `retry:` field: how long a browser waits before reconnecting. */
export const RETRY_MS = 2000

/** Who may read what, and how a stream's credential is checked again (sessions/authentication.ts). */
export interface StreamCaller {
  userId: bigint
  /** 'all' for an administrator, else the caller's own id. */
  reader: bigint | 'all'
  /** When the credential expires. */
  expiresAt: Date
  /** Resolves false once the credential is no longer good (logged out, revoked, expired, account deleted). */
  stillValid: () => Promise<boolean>
  /** Whether a revocation announced in this process (sessions/revocations.ts) is this stream's. */
  revokedBy: (revocation: Revocation) => boolean
}

interface Stream {
  request: FastifyRequest
  reply: FastifyReply
  caller: StreamCaller
  types: Set<string> | undefined
  position: bigint
  pumping: boolean
  again: boolean
  lastWriteAt: number
  checkedAt: number
  closed: boolean
  sent: number
}

export interface EventStreamsOptions {
  db: Db
  dialect: DialectName
  notifications: Notifications | undefined
  registry?: Registry
  log: { info: (obj: object, msg: string) => void, warn: (obj: object, msg: string) => void }
  /** The access line of a stream the client closed (Fastify logs one only when the answer finishes). */
  logCompleted: (request: FastifyRequest, reply: FastifyReply) => void
}

export class EventStreams {
  readonly #db: Db
  readonly #dialect: DialectName
  readonly #options: EventStreamsOptions
  readonly #streams = new Set<Stream>()
  readonly #perUser = new Map<bigint, number>()
  /** Streams past their caps' check that are not open yet. */
  #opening = 0
  #tail: bigint | undefined
  #ring: Array<{ row: EventRow, json: string }> = []
  readonly #reads = new CoalescedTask(async () => { await this.#read() }, (error) => { this.#options.log.warn({ err: error }, 'event streams: reading the feed failed') })
  #timer: NodeJS.Timeout | undefined
  #unsubscribe: Array<() => void> = []
  #closed = false
  readonly #sent: Counter | undefined
  readonly #dropped: Counter | undefined

  constructor (options: EventStreamsOptions) {
    this.#db = options.db
    this.#dialect = options.dialect
    this.#options = options
    const { registry } = options
    if (registry !== undefined) {
      const streams = this.#streams
      registry.registerMetric(new Gauge({ name: 'event_streams_open', help: 'Event streams (GET /v1/events, text/event-stream) open on this instance.', registers: [], collect () { this.set(streams.size) } }))
      this.#sent = new Counter({ name: 'event_stream_events_sent_total', help: 'Events sent on event streams.', registers: [registry] })
      this.#dropped = new Counter({ name: 'event_streams_ended_total', help: 'Event streams ended by the service, by reason.', labelNames: ['reason'], registers: [registry] })
    }
  }

  start (): void {
    this.#unsubscribe.push(onEventsCommitted(this.#db, () => { this.wake() }))
    this.#unsubscribe.push(onCredentialsRevoked(this.#db, (revocation) => { this.revoked(revocation) }))
    const notifications = this.#options.notifications
    if (notifications !== undefined) this.#unsubscribe.push(notifications.subscribe(EVENTS_CHANNEL, () => { this.wake() }))
    this.#timer = setInterval(() => { this.#tick() }, 1000)
    this.#timer.unref()
  }

  /** How many streams are open on this instance. */
  get count (): number {
    return this.#streams.size
  }

  /**
   * Refuses a stream the caps do not allow (429 TOO_MANY_STREAMS); otherwise takes over the
   * reply and starts the stream after `after` (undefined: after the newest event now).
   */
  async open (request: FastifyRequest, reply: FastifyReply, caller: StreamCaller, after: bigint | undefined, types: string[] | undefined): Promise<void> {
    if (this.#closed) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The server is shutting down.', headers: { 'retry-after': '1' } })
    const mine = this.#perUser.get(caller.userId) ?? 0
    if (mine >= STREAMS_PER_USER || this.#streams.size + this.#opening >= STREAMS_PER_PROCESS) {
      throw new ApiError('TOO_MANY_STREAMS', {
        message: mine >= STREAMS_PER_USER ? `At most ${STREAMS_PER_USER} event streams may be open for one user on one instance.` : 'This instance has as many event streams open as it takes.',
        headers: { 'retry-after': '30' }
      })
    }
    // The places are taken before anything is awaited: streams opening at the same time each
    // count the others.
    this.#perUser.set(caller.userId, mine + 1)
    this.#opening += 1
    try {
      // With no stream open the hub reads nothing: it starts again from the newest event (unless
      // a stream opened meanwhile, which the hub now serves from where it was).
      if (this.#streams.size === 0) {
        const newest = await this.#newest()
        if (this.#streams.size === 0) {
          this.#tail = newest
          this.#ring = []
        }
      }
    } catch (error) {
      this.#release(caller.userId)
      throw error
    } finally {
      this.#opening -= 1
    }
    if (this.#closed) {
      this.#release(caller.userId)
      throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The server is shutting down.', headers: { 'retry-after': '1' } })
    }
    const position = after ?? this.#tail!
    const stream: Stream = { request, reply, caller, types: types === undefined ? undefined : new Set(types), position, pumping: false, again: false, lastWriteAt: Date.now(), checkedAt: Date.now(), closed: false, sent: 0 }
    this.#streams.add(stream)
    const res = reply.raw
    reply.hijack()
    res.writeHead(200, {
      ...reply.getHeaders() as Record<string, string | number | string[]>,
      // Set on every other answer as it is sent (http/request-hooks.ts); a stream is written here.
      'x-request-id': request.id,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // nginx and some other proxies buffer a response unless told not to.
      'x-accel-buffering': 'no'
    })
    res.on('close', () => { this.#end(stream, 'client') })
    this.#write(stream, `retry: ${RETRY_MS}\n\n`)
    this.#options.log.info({ reqId: request.id, after: position.toString(), from: after === undefined ? 'now' : request.headers['last-event-id'] !== undefined ? 'Last-Event-ID' : 'after' }, 'event stream opened')
    void this.#pump(stream)
  }

  /** Ends the streams a revocation made here concerns, at once. */
  revoked (revocation: Revocation): void {
    for (const stream of this.#streams) if (stream.caller.revokedBy(revocation)) this.#end(stream, 'revoked')
  }

  /** Reads the events numbered since the last read into the ring, then brings every stream up to date. */
  wake (): void {
    if (this.#closed || this.#streams.size === 0 || this.#reads.busy()) return
    this.#reads.start(() => { this.wake() })
  }

  async #read (): Promise<void> {
    // PostgreSQL: committed events get their numbers first (and the other instances hear of them).
    if (this.#dialect === 'postgres') await numberEvents(this.#db)
    for (;;) {
      if (this.#tail === undefined) return
      const rows = await latestEvents(this.#db, this.#tail, RING)
      for (const row of rows) this.#ring.push({ row, json: eventJson(row) })
      if (rows.length > 0) this.#tail = BigInt(rows.at(-1)!.sequence)
      if (this.#ring.length > RING) this.#ring = this.#ring.slice(-RING)
      for (const stream of this.#streams) void this.#pump(stream)
      if (rows.length < RING) return
    }
  }

  /** The newest sequence now (0 with no event yet). */
  async #newest (): Promise<bigint> {
    if (this.#dialect === 'postgres') await numberEvents(this.#db)
    return await lastNumberedAfter(this.#db, 0n) ?? 0n
  }

  /** Sends a stream what lies after its position, from the ring or, further behind, from its own feed. */
  async #pump (stream: Stream): Promise<void> {
    if (stream.pumping) {
      stream.again = true
      return
    }
    stream.pumping = true
    try {
      do {
        stream.again = false
        for (;;) {
          if (stream.closed) return
          const tail = this.#tail
          if (tail !== undefined && stream.position >= tail) break
          const first = this.#ring[0]
          if (tail !== undefined && first !== undefined && stream.position >= BigInt(first.row.sequence) - 1n) {
            for (const { row, json } of this.#ring) {
              const sequence = BigInt(row.sequence)
              if (sequence <= stream.position) continue
              if (this.#visible(stream, row)) this.#send(stream, row, json)
              stream.position = sequence
              if (stream.closed) return
            }
            break
          }
          // Behind the ring: a page of the stream's own feed.
          const before = tail ?? await this.#newest()
          const rows = await listEvents(this.#db, { after: stream.position, limit: PAGE, types: stream.types === undefined ? undefined : [...stream.types], reader: stream.caller.reader })
          for (const row of rows) {
            if (stream.closed) return
            this.#send(stream, row, eventJson(row))
            stream.position = BigInt(row.sequence)
          }
          // A page not full holds every visible event up to the newest when it was read.
          if (rows.length < PAGE && before > stream.position) stream.position = before
          if (rows.length < PAGE && tail === undefined) break
        }
      } while (stream.again)
    } catch (error) {
      this.#options.log.warn({ err: error, reqId: stream.request.id }, 'event stream: reading the feed failed; the stream ends (the client reconnects with Last-Event-ID)')
      this.#end(stream, 'error')
    } finally {
      stream.pumping = false
    }
  }

  #visible (stream: Stream, row: EventRow): boolean {
    const { reader } = stream.caller
    if (reader !== 'all' && row.audience !== null && BigInt(row.audience) !== reader) return false
    return stream.types === undefined || stream.types.has(row.type)
  }

  #send (stream: Stream, row: EventRow, json: string): void {
    this.#write(stream, `id: ${String(row.sequence)}\nevent: ${row.type}\ndata: ${json}\n\n`)
    stream.sent += 1
    this.#sent?.inc()
  }

  #write (stream: Stream, text: string): void {
    const res = stream.reply.raw
    if (stream.closed || res.destroyed) return
    res.write(text)
    stream.lastWriteAt = Date.now()
    // A reader that stops reading: what waits for it is bounded.
    if (res.writableLength > BUFFER_LIMIT) this.#end(stream, 'slow reader', true)
  }

  /** Heartbeats, credential checks, the expiry of credentials, and the poll of the feed. */
  #tick (): void {
    const now = Date.now()
    for (const stream of this.#streams) {
      if (now >= stream.caller.expiresAt.getTime()) {
        this.#end(stream, 'expired')
        continue
      }
      if (now - stream.lastWriteAt >= HEARTBEAT_MS - 1000) this.#write(stream, ': keep-alive\n\n')
      if (now - stream.checkedAt >= CHECK_MS) {
        stream.checkedAt = now
        stream.caller.stillValid().then((valid) => { if (!valid) this.#end(stream, 'revoked') }, () => {})
      }
    }
    this.wake()
  }

  #end (stream: Stream, reason: string, abort = false): void {
    if (stream.closed) return
    stream.closed = true
    this.#streams.delete(stream)
    this.#release(stream.caller.userId)
    if (reason !== 'client') this.#dropped?.inc({ reason })
    const res = stream.reply.raw
    if (abort) res.destroy()
    else if (!res.writableEnded) res.end()
    // A stream the client closed, or one cut off, never finished its answer: its access line is written here.
    if (!res.writableFinished) this.#options.logCompleted(stream.request, stream.reply)
    this.#options.log.info({ reqId: stream.request.id, reason, sent: stream.sent, position: stream.position.toString() }, 'event stream ended')
  }

  /** Gives back a place of the user's. */
  #release (userId: bigint): void {
    const left = (this.#perUser.get(userId) ?? 1) - 1
    if (left === 0) this.#perUser.delete(userId)
    else this.#perUser.set(userId, left)
  }

  /** Ends every stream (cleanly: the browser reconnects elsewhere); no new one opens. */
  close (): void {
    this.#closed = true
    clearInterval(this.#timer)
    for (const unsubscribe of this.#unsubscribe) unsubscribe()
    for (const stream of [...this.#streams]) this.#end(stream, 'shutdown')
  }

  /** Ends the streams open now, and lets new ones open (the drain: clients move on before the instance goes). */
  endAll (reason: string): void {
    for (const stream of [...this.#streams]) this.#end(stream, reason)
  }
}
