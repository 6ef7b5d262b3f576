import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

// A webhook receiver on loopback for the tests: it records every request and answers each as
// the test says (a status, headers, or no answer at all).

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

export type Answer = { status: number, headers?: Record<string, string> } | 'hang'

export interface Receiver {
  url: string
  received: Received[]
  /** Decides each answer; by default 204. */
  answer: (request: Received, index: number) => Answer
  /** Resolves once `count` requests have arrived (rejects after `ms`). */
  waitFor: (count: number, ms?: number) => Promise<Received[]>
  close: () => Promise<void>
}

export async function startReceiver (path = '/hook'): Promise<Receiver> {
  const received: Received[] = []
  const waiters: Array<() => void> = []
  const hanging = new Set<import('node:http').ServerResponse>()
  const receiver: Receiver = {
    url: '',
    received,
    answer: () => ({ status: 204 }),
    waitFor: async (count, ms = 10_000) => await new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (received.length < count) return false
        resolve(received.slice(0, count))
        return true
      }
      if (check()) return
      const timer = setTimeout(() => { reject(new Error(`receiver: ${received.length} of ${count} requests after ${ms} ms`)) }, ms)
      waiters.push(() => { if (check()) clearTimeout(timer) })
    }),
    close: async () => {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const request: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      const index = received.length
      received.push(request)
      const answer = receiver.answer(request, index)
      if (answer === 'hang') hanging.add(res)
      else res.writeHead(answer.status, answer.headers).end()
      for (const waiter of [...waiters]) waiter()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`
  return receiver
}
