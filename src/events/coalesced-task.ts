// A task that runs one at a time (the event streams' read of the feed, the webhook dispatcher's
// round): asked for while it runs, it runs once more when that run ends, however many times it
// was asked for meanwhile, so work that arrived during a run never waits for the next ask. The
// run after is asked for again through the caller's own entry point, so the caller's conditions
// (a shutdown, a spacing between runs) apply to it too.
export class CoalescedTask {
  readonly #task: () => Promise<void>
  readonly #onError: (error: unknown) => void
  #running = false
  #again = false

  constructor (task: () => Promise<void>, onError: (error: unknown) => void) {
    this.#task = task
    this.#onError = onError
  }

  get running (): boolean {
    return this.#running
  }

  /** True while a run is going on, and then that run is followed by another. */
  busy (): boolean {
    if (this.#running) this.#again = true
    return this.#running
  }

  /** Starts a run (not while one is going on: ask `busy()` first); `askAgain` is called after it if it was asked for meanwhile. */
  start (askAgain: () => void): void {
    this.#running = true
    void this.#task().catch(this.#onError).finally(() => {
      this.#running = false
      if (this.#again) {
        this.#again = false
        askAgain()
      }
    })
  }
}
