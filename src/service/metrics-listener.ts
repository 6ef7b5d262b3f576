import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { catalogue } from '../http/errors.js'

// Not `import { createServer } from 'node:http'`: an ES module import of node:http loads the
// runtime's bundled undici (pipeline/client-error.ts says why).
const { createServer } = process.getBuiltinModule('node:http')

// GET /metrics on its own, private listener (METRICS_HOST:METRICS_PORT, 127.0.0.1:9464 by
// default): the metrics show the exact runtime version and live business counts, which are for
// the operator's scraper, not for the public port (which answers 404 there). A plain node:http
// server: it serves one read-only path, so it needs none of the API's machinery; anything else
// gets our error body.

export interface MetricsListener {
  /** Starts listening; resolves with the bound address (`host:port`). */
  listen: (host: string, port: number) => Promise<string>
  /** Stops listening; resolves at once when it never started. */
  close: () => Promise<void>
}

function problem (status: 404 | 405, code: 'NOT_FOUND' | 'METHOD_NOT_ALLOWED'): { body: string, requestId: string } {
  const requestId = randomUUID()
  const entry = catalogue[code]
  return { requestId, body: JSON.stringify({ type: `/errors/${code}`, title: entry.title, status, code, message: entry.message, requestId }) }
}

/** `render` gives the whole exposition, in `contentType`, at each scrape. */
export function createMetricsListener (contentType: string, render: () => Promise<string>): MetricsListener {
  let server: Server | undefined
  const handle = async (method: string, path: string): Promise<{ status: number, headers: Record<string, string>, body: string }> => {
    if (path !== '/metrics') {
      const { body, requestId } = problem(404, 'NOT_FOUND')
      return { status: 404, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId }, body }
    }
    if (method !== 'GET' && method !== 'HEAD') {
      const { body, requestId } = problem(405, 'METHOD_NOT_ALLOWED')
      return { status: 405, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, allow: 'GET, HEAD' }, body }
    }
    return { status: 200, headers: { 'content-type': contentType, 'cache-control': 'no-store' }, body: await render() }
  }
  return {
    listen: async (host, port) => {
      const s = createServer((req, res) => {
        const path = (req.url ?? '/').split('?')[0]
        handle(req.method ?? 'GET', path ?? '/').then(({ status, headers, body }) => {
          res.writeHead(status, { ...headers, 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(body) })
          res.end(req.method === 'HEAD' ? undefined : body)
        }, () => { res.writeHead(500).end() })
      })
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject)
        s.listen(port, host, () => { s.off('error', reject); resolve() })
      })
      server = s
      const address = s.address() as AddressInfo
      return `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
    },
    close: async () => {
      const s = server
      server = undefined
      if (s === undefined) return
      s.closeAllConnections()
      await new Promise<void>((resolve) => s.close(() => { resolve() }))
    }
  }
}
