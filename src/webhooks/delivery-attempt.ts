import type { Dispatcher } from 'undici'
import { VERSION } from '../version.js'
import { signatures } from './secret.js'

// One attempt to deliver: a signed POST of the event, judged by its answer. Redirects are not
// followed (a 3xx is a failed attempt: the endpoint's URL is the one its owner registered).

export interface AttemptTarget {
  url: string
  /** The secrets that sign: the current one, and the previous one during a rotation. */
  secrets: string[]
}

export interface AttemptResult {
  ok: boolean
  /** The HTTP status of the answer, if there was one. */
  status: number | undefined
  /** Why it failed, for the delivery log. */
  error: string | undefined
  /** Seconds the endpoint asked to wait (Retry-After on 429 and 503). */
  retryAfterSeconds: number | undefined
  durationMs: number
  /** Stopped because the service is stopping: not the endpoint's failure. */
  aborted: boolean
}

const MAX_RETRY_AFTER_S = 24 * 60 * 60

/** Seconds from a Retry-After value (delay-seconds or an HTTP date), capped at a day. */
export function retryAfterSeconds (value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined) return undefined
  const seconds = /^\d+$/.test(text.trim()) ? Number(text.trim()) : (Date.parse(text) - now) / 1000
  if (!Number.isFinite(seconds)) return undefined
  return Math.min(Math.max(0, seconds), MAX_RETRY_AFTER_S)
}

function describe (error: unknown, timeoutMs: number): string {
  const e = error as { name?: string, code?: string, message?: string, cause?: { code?: string, message?: string } }
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `timed out after ${timeoutMs} ms`
  }
  // The delivery log is the endpoint owner's to read: it says the target was refused, not which
  // address the operator's resolver gave.
  if (e.code === 'WEBHOOK_TARGET_REFUSED' || e.cause?.code === 'WEBHOOK_TARGET_REFUSED') return 'refused: the endpoint\'s address is not a public one'
  const code = e.code ?? e.cause?.code
  const message = e.message ?? e.cause?.message ?? String(error)
  return (code === undefined ? message : `${code}: ${message}`).slice(0, 500)
}

export async function attemptDelivery (target: AttemptTarget, messageId: string, body: string, options: { dispatcher: Dispatcher, timeoutMs: number, signal: AbortSignal }): Promise<AttemptResult> {
  const started = performance.now()
  const at = new Date()
  const elapsed = (): number => Math.round(performance.now() - started)
  const timeout = AbortSignal.timeout(options.timeoutMs)
  try {
    const { request } = await import('undici')
    const response = await request(target.url, {
      method: 'POST',
      dispatcher: options.dispatcher,
      headers: {
        'content-type': 'application/json',
        'user-agent': `resource-api-webhooks/${VERSION}`,
        'webhook-id': messageId,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signatures(target.secrets, messageId, at, body)
      },
      body,
      signal: AbortSignal.any([timeout, options.signal]),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs
    })
    // The answer's body is not kept; it is read (a little of it) so the connection can be reused.
    await response.body.dump({ limit: 64 * 1024 }).catch(() => {})
    const status = response.statusCode
    const ok = status >= 200 && status < 300
    const retryAfter = status === 429 || status === 503 ? retryAfterSeconds(response.headers['retry-after']) : undefined
    return { ok, status, error: ok ? undefined : `answered ${status}`, retryAfterSeconds: retryAfter, durationMs: elapsed(), aborted: false }
  } catch (error) {
    const aborted = options.signal.aborted && !timeout.aborted
    return {
      ok: false,
      status: undefined,
      error: aborted ? 'stopped: the service was shutting down' : describe(error, options.timeoutMs),
      retryAfterSeconds: undefined,
      durationMs: elapsed(),
      aborted
    }
  }
}
