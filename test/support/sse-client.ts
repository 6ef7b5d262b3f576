import { request } from 'undici'

// A Server-Sent Events client for the tests, as the specification reads a stream: fields
// `id`, `event`, `data` and `retry` up to a blank line; lines starting with `:` are comments.

export interface SseMessage { id?: string, event?: string, data?: string, retry?: string }

export interface SseStream {
  status: number
  headers: Record<string, string | string[] | undefined>
  /** The body of an answer that is not a stream (an error). */
  body: () => Promise<string>
  /** Every message so far, comments apart. */
  messages: SseMessage[]
  comments: string[]
  /** Resolves once at least `count` messages with data have arrived (rejects after `ms`). */
  events: (count: number, ms?: number) => Promise<SseMessage[]>
  /** Resolves once the server has ended the stream (rejects after `ms`); how it ended. */
  ended: (ms?: number) => Promise<'end' | 'error'>
  close: () => void
}

export async function openStream (url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const controller = new AbortController()
  // A stream that never opens fails the test within seconds, not after undici's 300 s.
  const res = await request(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal, headersTimeout: 15_000 })
  const messages: SseMessage[] = []
  const comments: string[] = []
  let ending: 'end' | 'error' | undefined
  const waiters = new Set<() => void>()
  const notify = (): void => { for (const waiter of waiters) waiter() }
  const isStream = res.statusCode === 200 && String(res.headers['content-type']).startsWith('text/event-stream')
  if (isStream) {
    let buffer = ''
    let current: SseMessage = {}
    res.body.setEncoding('utf8')
    res.body.on('data', (chunk: string) => {
      buffer += chunk
      for (;;) {
        const newline = buffer.indexOf('\n')
        if (newline === -1) break
        const line = buffer.slice(0, newline).replace(/\r$/, '')
        buffer = buffer.slice(newline + 1)
        if (line === '') {
          if (Object.keys(current).length > 0) messages.push(current)
          current = {}
        } else if (line.startsWith(':')) {
          comments.push(line.slice(1).trim())
        } else {
          const colon = line.indexOf(':')
          const field = colon === -1 ? line : line.slice(0, colon)
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
          if (field === 'data') current.data = current.data === undefined ? value : `${current.data}\n${value}`
          else if (field === 'id' || field === 'event' || field === 'retry') current[field] = value
        }
      }
      notify()
    })
    res.body.on('end', () => { ending ??= 'end'; notify() })
    res.body.on('error', () => { ending ??= 'error'; notify() })
  }
  const wait = async (ready: () => boolean, ms: number, what: string): Promise<void> => {
    if (ready()) return
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`timed out after ${ms} ms waiting for ${what}`)) }, ms)
      const check = (): void => {
        if (!ready()) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve()
      }
      waiters.add(check)
    })
  }
  return {
    status: res.statusCode,
    headers: res.headers,
    body: async () => await res.body.text(),
    messages,
    comments,
    events: async (count, ms = 10_000) => {
      const withData = (): SseMessage[] => messages.filter((m) => m.data !== undefined)
      await wait(() => withData().length >= count, ms, `${count} events (have ${withData().length})`)
      return withData()
    },
    ended: async (ms = 10_000) => {
      await wait(() => ending !== undefined, ms, 'the end of the stream')
      return ending!
    },
    close: () => { controller.abort(); res.body.destroy() }
  }
}

export interface Follower {
  /** The sequence of every event received, in order. */
  sequences: number[]
  /** How many times the stream was opened (1 + reconnections). */
  opened: number
  /** Resolves once the last sequence received is `sequence` or later (rejects after `ms`). */
  reach: (sequence: number, ms?: number) => Promise<void>
  stop: () => void
}

/**
 * A client that follows the stream as a browser's EventSource does: whenever the stream ends or
 * breaks, it opens it again with the last id it received as Last-Event-ID.
 */
export function follow (url: string, headers: Record<string, string>): Follower {
  const sequences: number[] = []
  let stopped = false
  let current: SseStream | undefined
  const follower: Follower = {
    sequences,
    opened: 0,
    reach: async (sequence, ms = 30_000) => {
      const started = Date.now()
      while ((sequences.at(-1) ?? 0) < sequence) {
        if (Date.now() - started > ms) throw new Error(`timed out: reached ${sequences.at(-1)}, waiting for ${sequence}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    stop: () => { stopped = true; current?.close() }
  }
  void (async () => {
    while (!stopped) {
      try {
        const last = sequences.at(-1)
        current = await openStream(url, { ...headers, ...(last === undefined ? {} : { 'last-event-id': String(last) }) })
        follower.opened += 1
        if (current.status === 200) {
          let seen = 0
          const take = (): void => {
            for (const m of current!.messages.slice(seen)) if (m.id !== undefined && m.data !== undefined) sequences.push(Number(m.id))
            seen = current!.messages.length
          }
          while (!stopped) {
            const ended = await Promise.race([current.ended(250).then(() => true, () => false)])
            take()
            if (ended) break
          }
        }
      } catch {
        // Refused or reset (an instance going away): again shortly, as EventSource does.
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, 200))
    }
  })()
  return follower
}
