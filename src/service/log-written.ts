import type { FastifyBaseLogger } from 'fastify'
import { symbols } from 'pino'
import { flushAccessLines } from '../pipeline/request-log.js'

// The log is written asynchronously (pino's SonicBoom destination): lines are queued and
// written by a write on libuv's thread pool. A fatal line is written at once, synchronously
// (pino flushes on `fatal`), and so is whatever is queued when the process exits; neither
// waits for the write already in flight, so the fatal line could land in the file before lines
// logged earlier. Before the service exits on its own (an uncaught exception, a failed
// start-up), it logs the fatal line from the moment the destination has drained: then nothing
// is in flight, and the line lands after every earlier one. It waits a second at most.

const LIMIT_MS = 1000

interface Destination {
  once: (event: 'drain', listener: () => void) => unknown
  removeListener: (event: 'drain', listener: () => void) => unknown
  /** SonicBoom's own mark of a write in flight. */
  _writing?: boolean
}

/**
 * Runs `log` (which logs the fatal line) as soon as no write of `logger`'s is in flight: now,
 * when its destination drains, or after a second; resolves once it has run. It runs inside the
 * drain's own callback, so no other line can be queued in between.
 */
export async function logWhenWritten (logger: FastifyBaseLogger, log: () => void): Promise<void> {
  // The access lines of this turn first (src/pipeline/request-log.ts).
  flushAccessLines()
  const destination = (logger as unknown as Record<symbol, unknown>)[symbols.streamSym] as Destination | undefined
  if (destination?._writing !== true) {
    log()
    return
  }
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      destination.removeListener('drain', done)
      log()
      resolve()
    }
    const timer = setTimeout(done, LIMIT_MS)
    destination.once('drain', done)
  })
}
