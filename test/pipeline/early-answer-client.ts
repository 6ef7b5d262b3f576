import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { Agent, fetch } from 'undici'

// Clients for answers a server gives before it has read the request body (test/http and the
// cluster's system test): a keep-alive undici client, as fetch uses it, that uploads from a
// buffer or a stream; and a raw socket that uploads slowly, the naive uploader that keeps writing
// until its socket fails. Each try records the answer, or the socket error that took its place.

export const MiB = 1024 * 1024
/** One buffer for every upload: the clients allocate nothing per try. */
export const BIG = Buffer.alloc(50 * MiB, 0x20)

export interface Answer { status: number, body: string }

export function assertProblem (answer: Answer, status: number, code: string, label: string): void {
  assert.equal(answer.status, status, `${label}: ${answer.body}`)
  const problem = JSON.parse(answer.body) as { code: string, status: number }
  assert.equal(problem.code, code, label)
  assert.equal(problem.status, status, label)
}

export interface Upload {
  method: string
  path: string
  headers?: Record<string, string>
  /** Bytes from BIG, sent with their Content-Length; or 'chunked': 50 MiB as a stream of 64 KiB chunks. */
  size: number | 'chunked'
}

/**
 * `tries` uploads on one keep-alive connection, each after a small GET on that connection, so
 * the upload goes out on a reused one. Resolves with the answers and the socket errors (the code
 * of each try that got an error instead of an answer).
 */
export async function undiciTries (base: string, upload: Upload, tries: number): Promise<{ answers: Answer[], errors: string[] }> {
  const agent = new Agent({ connections: 1 })
  const answers: Answer[] = []
  const errors: string[] = []
  try {
    for (let i = 0; i < tries; i++) {
      await (await fetch(`${base}/health/live`, { dispatcher: agent })).arrayBuffer()
      try {
        const res = await fetch(`${base}${upload.path}`, { method: upload.method, headers: upload.headers, body: body(upload.size), duplex: 'half', dispatcher: agent })
        answers.push({ status: res.status, body: await res.text() })
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause
        errors.push(cause?.code ?? String(error))
      }
    }
  } finally {
    await agent.close()
  }
  return { answers, errors }
}

function body (size: number | 'chunked'): Buffer | ReadableStream<Uint8Array> {
  if (size !== 'chunked') return BIG.subarray(0, size)
  let sent = 0
  return new ReadableStream<Uint8Array>({
    pull (controller) {
      if (sent >= BIG.length) { controller.close(); return }
      controller.enqueue(BIG.subarray(sent, sent + 64 * 1024))
      sent += 64 * 1024
    }
  })
}

export interface RawOutcome {
  status: number
  headers: Record<string, string>
  body: string
  /** Body bytes the client managed to hand to its socket before it was closed. */
  sentBytes: number
  /** A socket error (EPIPE, ECONNRESET) seen before the whole answer was read. */
  errorBeforeAnswer: string | undefined
  /** Whether the server's FIN came before any socket error: a lingering close, not a reset. */
  finBeforeError: boolean
}

const CHUNK = Buffer.alloc(64 * 1024, 0x20)

/** Sends `head`, then `total` body bytes (chunked if asked), 64 KiB every 2 ms, until the server closes. */
export async function rawExchange (port: number, head: string, options: { total: number, chunked?: boolean, host?: string }): Promise<RawOutcome> {
  const socket = connect({ port, host: options.host ?? '127.0.0.1', allowHalfOpen: true })
  let raw = Buffer.alloc(0)
  let errorBeforeAnswer: string | undefined
  let errored = false
  let finBeforeError = false
  let sentBytes = 0
  const answered = (): boolean => {
    const end = raw.indexOf('\r\n\r\n')
    if (end === -1) return false
    const length = /\r\ncontent-length: *(\d+)/i.exec(raw.subarray(0, end).toString('latin1'))?.[1]
    return length !== undefined && raw.length >= end + 4 + Number(length)
  }
  socket.on('data', (chunk: Buffer) => { raw = Buffer.concat([raw, chunk]) })
  socket.on('end', () => { if (!errored) finBeforeError = true })
  socket.on('error', (error: Error & { code?: string }) => {
    errored = true
    if (!answered()) errorBeforeAnswer ??= error.code ?? error.message
  })
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
  socket.write(head)
  const writer = setInterval(() => {
    // Only what the kernel takes: a client that keeps a few chunks queued, not one that buffers 50 MiB.
    if (!socket.writable || socket.writableLength > 4 * CHUNK.length || sentBytes >= options.total) return
    socket.write(options.chunked === true ? Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]) : CHUNK)
    sentBytes += CHUNK.length
  }, 2)
  // The server half-closes after its answer; the client stops writing once the server is gone.
  await new Promise<void>((resolve) => { socket.once('close', () => { resolve() }) })
  clearInterval(writer)
  const text = raw.toString('latin1')
  const [headText = '', body = ''] = text.split('\r\n\r\n')
  const [statusLine = '', ...lines] = headText.split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine.split(' ')[1]), headers, body, sentBytes, errorBeforeAnswer, finBeforeError }
}

/** `tries` raw slow uploads, ten at a time (each lasts until the server's lingering close ends it). */
export async function rawTries (port: number, head: string, options: { total: number, chunked?: boolean, host?: string }, tries: number): Promise<RawOutcome[]> {
  const outcomes: RawOutcome[] = []
  for (let i = 0; i < tries; i += 10) {
    outcomes.push(...await Promise.all(Array.from({ length: Math.min(10, tries - i) }, async () => await rawExchange(port, head, options))))
  }
  return outcomes
}
