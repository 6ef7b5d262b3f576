// A bounded number of jobs at once (password hashes, image processing), and a bounded line of
// jobs waiting for a slot: a job that finds the line full is refused at once (an upload is then
// answered 503 with Retry-After) instead of growing memory with every job a burst brings. Slots
// pass in arrival order.

export class SlotsFull extends Error {
  constructor () {
    super('every slot is taken and the line is full')
    this.name = 'SlotsFull'
  }
}

export class WorkSlots {
  readonly #slots: number
  readonly #line: number
  #running = 0
  readonly #waiting: Array<() => void> = []

  constructor (slots: number, line: number) {
    this.#slots = slots
    this.#line = line
  }

  /** Jobs running and waiting, for the metrics. */
  get load (): { running: number, waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length }
  }

  /** Whether a job would be refused now: every slot taken and the line full. */
  get full (): boolean {
    return this.#running >= this.#slots && this.#waiting.length >= this.#line
  }

  /** Runs the job in a slot; throws SlotsFull, without running it, when none is free and the line is full. */
  async run<T> (job: () => Promise<T>): Promise<T> {
    if (this.#running < this.#slots) this.#running += 1
    else if (this.#waiting.length < this.#line) await new Promise<void>((resolve) => { this.#waiting.push(resolve) })
    else throw new SlotsFull()
    try {
      return await job()
    } finally {
      // The slot passes straight to the next in line, or is freed.
      const next = this.#waiting.shift()
      if (next !== undefined) next()
      else this.#running -= 1
    }
  }
}
