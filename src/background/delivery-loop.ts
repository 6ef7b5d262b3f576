import type { Notifications } from '../db/notifications.js'
import { CoalescedTask } from '../events/coalesced-task.js'

// Background delivery, one design for everything the service sends on its own (webhook
// deliveries, mail): a row per item in an outbox table, written in the same unit of work as
// the change that causes it, and a loop in every instance that claims due rows (background/
// claims.ts: a lease per claimed row, so one instance of several sends each, and a dead
// instance's claim runs out and is retried: at least once), sends a few at a time, and records
// each outcome (done, retried later after a backoff (background/retry.ts), or given up).
//
// A round starts when this instance commits (the caller says which commits matter), when
// another instance announces new work (PostgreSQL NOTIFY), when an item finishes, and on a
// poll (retries fall due, and an announcement is only a hint). Rounds never overlap and are
// spaced: under a stream of writes, one round takes the work of many commits at once.

/** Where a background sender logs (a pino child logger). */
export interface BackgroundLog {
  warn: (obj: object, msg: string) => void
  info: (obj: object, msg: string) => void
}

export interface DeliveryLoopOptions<Item> {
  /** What the loop sends, for its log lines ('webhook delivery', 'mail'). */
  name: string
  log: BackgroundLog
  pollMs: number
  /** Items sent at once by this instance. */
  maxInFlight: number
  /** Work of a round before its claim (the webhooks' fan-out, pruning). */
  round?: () => Promise<void>
  /** Claims up to `free` due items for this instance. */
  claim: (free: number) => Promise<Item[]>
  /** Sends one claimed item and records the outcome; `signal` aborts when the instance stops. */
  send: (item: Item, signal: AbortSignal) => Promise<void>
  /** Subscribes to this instance's commits of new work (returns the unsubscribe). */
  wakeOn?: (wake: () => void) => () => void
  /** PostgreSQL: other instances' announcements of new work on this channel. */
  notifications?: { channel: string, hub: Notifications | undefined }
}

/** The least time between the starts of two rounds (or the poll interval, if shorter). */
const ROUND_SPACING_MS = 250
/** How long a stopping instance lets items in flight finish before it aborts them. */
const STOP_GRACE_MS = 2000

export class DeliveryLoop<Item> {
  readonly #options: DeliveryLoopOptions<Item>
  readonly #inFlight = new Set<Promise<void>>()
  readonly #stopping = new AbortController()
  // The database may be out of reach: the next poll tries again.
  readonly #rounds: CoalescedTask
  #claiming: Promise<void> | undefined
  #claimAgain = false
  #lastRound = 0
  #scheduled: NodeJS.Timeout | undefined
  readonly #spacingMs: number
  #timer: NodeJS.Timeout | undefined
  #unlisten: (() => void) | undefined
  #unsubscribe: (() => void) | undefined

  constructor (options: DeliveryLoopOptions<Item>) {
    this.#options = options
    this.#spacingMs = Math.min(ROUND_SPACING_MS, options.pollMs)
    this.#rounds = new CoalescedTask(async () => { await this.#round() }, (error) => { options.log.warn({ err: error }, `${options.name} round failed`) })
  }

  get signal (): AbortSignal {
    return this.#stopping.signal
  }

  start (): void {
    const { wakeOn, notifications, pollMs } = this.#options
    this.#unsubscribe = wakeOn?.(() => { this.wake() })
    this.#timer = setInterval(() => { this.wake() }, pollMs)
    this.#timer.unref()
    this.#unlisten = notifications?.hub?.subscribe(notifications.channel, () => { this.wake() })
    this.wake()
  }

  /** Starts a round: now, or once the one running is over; never sooner than the spacing after the last one began. */
  wake (): void {
    if (this.#stopping.signal.aborted) return
    if (this.#rounds.busy() || this.#scheduled !== undefined) return
    const wait = this.#lastRound + this.#spacingMs - Date.now()
    if (wait > 0) {
      this.#scheduled = setTimeout(() => {
        this.#scheduled = undefined
        this.wake()
      }, wait)
      return
    }
    this.#lastRound = Date.now()
    this.#rounds.start(() => { this.wake() })
  }

  async #round (): Promise<void> {
    await this.#options.round?.()
    await this.#claimAndSend()
  }

  /**
   * Claims due items for the free sending slots and starts them. A slot freed by a finished
   * send is filled at once, not at the next round (rounds are spaced). One claim runs at a
   * time, so the slots are never overfilled; a call during a claim makes it run once more.
   */
  async #claimAndSend (): Promise<void> {
    if (this.#claiming !== undefined) {
      this.#claimAgain = true
      return await this.#claiming
    }
    this.#claiming = this.#claim().finally(() => {
      this.#claiming = undefined
      if (this.#claimAgain) {
        this.#claimAgain = false
        this.#topUp()
      }
    })
    return await this.#claiming
  }

  #topUp (): void {
    if (this.#stopping.signal.aborted) return
    this.#claimAndSend().catch((error: unknown) => { this.#options.log.warn({ err: error }, `${this.#options.name} claim failed`) })
  }

  async #claim (): Promise<void> {
    const free = this.#options.maxInFlight - this.#inFlight.size
    if (free <= 0 || this.#stopping.signal.aborted) return
    for (const item of await this.#options.claim(free)) {
      const sending: Promise<void> = this.#options.send(item, this.#stopping.signal)
        .catch((error: unknown) => { this.#options.log.warn({ err: error }, `${this.#options.name} could not be recorded`) })
        .finally(() => {
          this.#inFlight.delete(sending)
          this.#topUp()
          this.wake()
        })
      this.#inFlight.add(sending)
    }
  }

  async stop (): Promise<void> {
    if (this.#stopping.signal.aborted) return
    clearInterval(this.#timer)
    clearTimeout(this.#scheduled)
    this.#unsubscribe?.()
    const settled = Promise.allSettled([...this.#inFlight])
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref())])
    this.#stopping.abort()
    await this.#claiming?.catch(() => {})
    await Promise.allSettled([...this.#inFlight])
    // A round still running finishes its statements before the database closes.
    while (this.#rounds.running) await new Promise((resolve) => setTimeout(resolve, 10))
    this.#unlisten?.()
  }
}
