import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import { symbols } from 'pino'
import { redactedUrl as redacted } from './redacted-url.js'
import { planOf } from './route-plan.js'

// One access line per request, at info, under any load (no sampling), written once the answer
// has gone out, with everything needed to follow it: the request id, method, URL, route
// pattern, status, time and client address. It is Fastify's own hook for request logging (its
// LogController), so no extra request hook runs; every other line (errors, not-found, the
// arrival at debug) stays pino's.
//
// The line is the one pino would write for `request.log.info({ method, url, route, statusCode,
// responseTime, remoteAddress }, 'request completed')`, member for member (NDJSON that pino-pretty
// and log shippers read; responseTime to the microsecond), but built here as text and handed to
// the logger's own destination: pino's generic serialisation walked the object and escaped every
// value, and Fastify's `routeOptions` built an object of twelve members for the route's pattern;
// together most of the line's cost (docs/PERFORMANCE.md). Values that may hold a quote, a
// backslash or a control character (the URL, a client's request id, the client address) are
// escaped as JSON.stringify would; the others are safe by construction (a method Node parsed, a
// route pattern, a number).
//
// The lines reach the destination (pino's SonicBoom) in batches: every FLUSH_MS, or as soon as
// FLUSH_BYTES are waiting, and at once by flush() (the process exiting, a fatal line:
// src/service/log-written.ts). SonicBoom measures the byte length of all it has buffered on
// every write (3 µs a line under load, written one by one), and each of its writes is a write()
// on the thread pool, on the same core as the server when it is pinned to one. A line of
// pino's own (an error) may therefore precede the access lines of requests that finished just
// before it; each line carries its time.
//
// A credential in the URL (a stream ticket's `?ticket=`, or anything named or shaped like one)
// never reaches the log: its value is replaced by `[REDACTED]` (pipeline/redacted-url.ts).

const PLAIN = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/
/** A string as a JSON string literal: as it is when nothing in it needs escaping. */
const text = (value: string): string => PLAIN.test(value) ? `"${value}"` : JSON.stringify(value)

// responseTime in milliseconds to the microsecond, written from integers: the shortest form of
// an arbitrary double (0.08373399999982212) is V8's slowest number-to-text conversion, and the
// digits past the microsecond are the timer's noise. Three digits after the point, as JSON allows.
const THOUSANDTHS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'))
const milliseconds = (value: number): string => {
  const micro = Math.round(value * 1000)
  return micro >= 0 && micro < 2 ** 31 ? `${Math.trunc(micro / 1000)}.${THOUSANDTHS[micro % 1000]!}` : String(value)
}

const FLUSH_MS = 20
const FLUSH_BYTES = 16 * 1024

interface Destination { write: (line: string) => unknown }

/** What is counted of every answered request (service/request-metrics.ts). */
export interface RequestRecorder { record: (method: string, route: string, status: number, seconds: number) => void }
interface Pino { isLevelEnabled: (level: string) => boolean, [key: symbol]: unknown }

/** Every RequestLog with lines not yet written: flushed when the process exits, before pino's own last flush. */
const unwritten = new Set<RequestLog>()

/** Writes every access line not yet written (before a last line that must come after them). */
export function flushAccessLines (): void {
  for (const log of unwritten) log.flush()
}
process.on('exit', flushAccessLines)

export class RequestLog extends LogController {
  /**
   * Counts every answered request, here rather than in an onResponse hook of its own: Fastify
   * calls the log controller once the answer has gone out whenever the app has a logger (the
   * service's always has one, silent at least: app.ts), whether or not it logs at info, and a
   * route with no onResponse hook skips that phase's runner.
   */
  metrics: RequestRecorder | undefined
  /** The logger's destination and its base members (`,"pid":…,"hostname":…`), once known; null: no access lines. */
  #sink: { destination: Destination, base: string } | null | undefined
  /** The lines not yet written, and the timer that will write them. */
  #pending = ''
  #timer: NodeJS.Timeout | undefined
  readonly #writeLater = (): void => {
    this.#timer = undefined
    this.flush()
  }

  /** Writes the lines not yet written to the destination now. */
  flush (): void {
    if (this.#pending === '' || this.#sink === null || this.#sink === undefined) return
    const text = this.#pending
    this.#pending = ''
    unwritten.delete(this)
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#sink.destination.write(text)
  }

  // Fastify's own 404 handler's line (the service has its own handler; this is in case), with the URL redacted.
  override routeNotFound (request: FastifyRequest): void {
    request.log.info({ method: request.method, url: redacted(request.url) }, 'route not found')
  }

  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: redacted(request.url) }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const route = planOf(request).route
    if (error !== null && error !== undefined) {
      this.metrics?.record(request.method, route ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
      reply.log.error({ method: request.method, url: redacted(request.url), route, statusCode: reply.statusCode, responseTime: reply.elapsedTime, remoteAddress: request.ip, err: error }, 'request errored')
      return
    }
    this.answered(request.server.log, request.id, request.method, request.url, route, reply.statusCode, reply.elapsedTime, request.ip)
  }

  /**
   * Counts an answered request and writes its access line: for Fastify's request path above,
   * and for a read answered before it (pipeline/fast-reads.ts), so both write the same line.
   */
  answered (logger: unknown, id: string, method: string, url: string, route: string | undefined, statusCode: number, responseTime: number, address: string | undefined): void {
    this.metrics?.record(method, route ?? 'unmatched', statusCode, responseTime / 1000)
    const sink = this.#sink ?? this.#sinkOf(logger as Pino)
    if (sink === null) return
    if (this.#pending === '') {
      this.#timer = setTimeout(this.#writeLater, FLUSH_MS)
      this.#timer.unref()
      unwritten.add(this)
    }
    this.#pending += (`{"level":30,"time":${Date.now()}${sink.base},"reqId":${text(id)},"method":"${method}","url":${text(redacted(url))}` +
      `${route === undefined ? '' : `,"route":"${route}"`},"statusCode":${statusCode},"responseTime":${milliseconds(responseTime)}` +
      `${address === undefined ? '' : `,"remoteAddress":${text(address)}`},"msg":"request completed"}\n`)
    if (this.#pending.length >= FLUSH_BYTES) this.flush()
  }

  /** The destination of the server's logger (pino's), or null when it logs nothing at info (or is not pino). */
  #sinkOf (logger: Pino): { destination: Destination, base: string } | null {
    const destination = logger[symbols.streamSym] as Destination | undefined
    const base = logger[symbols.chindingsSym]
    this.#sink = typeof destination?.write !== 'function' || typeof base !== 'string' || !logger.isLevelEnabled('info')
      ? null
      : { destination, base }
    return this.#sink
  }
}
