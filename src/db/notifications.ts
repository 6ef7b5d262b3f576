import type pg from 'pg'
import { pgModule } from './pg-module.js'

// PostgreSQL's LISTEN/NOTIFY, for the hints instances give each other: new webhook deliveries
// (webhooks/dispatcher.ts), newly numbered events (events/event-stream.ts). One connection per
// instance listens on every channel asked for. A notification is only a hint: whoever waits on
// one also polls, so one lost while the connection is down delays work, never loses it.
//
// The connection is made again a second after it is lost, once per lost connection however many
// ways its loss is reported ('error', 'end', the failed connect): each report used to start a new
// listener, doubling them every second while no primary answered, until their connections took
// every slot PostgreSQL had and Patroni could not bring the old primary back.

export class Notifications {
  readonly #url: string
  readonly #subscribers = new Map<string, Set<(payload: string) => void>>()
  #client: pg.Client | undefined
  #stopped = false

  constructor (databaseUrl: string) {
    this.#url = databaseUrl
  }

  /** Calls `listener` on every notification on `channel` (a fixed, lower-case name); returns the unsubscribe. */
  subscribe (channel: string, listener: (payload: string) => void): () => void {
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`not a channel name: ${channel}`)
    let listeners = this.#subscribers.get(channel)
    if (listeners === undefined) {
      this.#subscribers.set(channel, listeners = new Set())
      if (this.#client === undefined) this.#connect()
      else void this.#client.query(`listen ${channel}`).catch(() => {})
    }
    listeners.add(listener)
    return () => { listeners.delete(listener) }
  }

  #connect (): void {
    if (this.#stopped) return
    const client = new (pgModule().Client)({ connectionString: this.#url, connectionTimeoutMillis: 3000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 })
    this.#client = client
    let retried = false
    const retry = (): void => {
      if (retried) return
      retried = true
      client.removeAllListeners()
      client.on('error', () => {})
      void client.end().catch(() => {})
      if (this.#client === client) this.#client = undefined
      if (!this.#stopped) setTimeout(() => { this.#connect() }, 1000).unref()
    }
    client.on('notification', (message) => {
      for (const listener of this.#subscribers.get(message.channel) ?? []) listener(message.payload ?? '')
    })
    client.on('error', retry)
    client.on('end', retry)
    client.connect()
      .then(async () => { for (const channel of this.#subscribers.keys()) await client.query(`listen ${channel}`) })
      .catch(retry)
  }

  async stop (): Promise<void> {
    this.#stopped = true
    const client = this.#client
    this.#client = undefined
    if (client === undefined) return
    client.removeAllListeners()
    client.on('error', () => {})
    await client.end().catch(() => {})
  }
}
