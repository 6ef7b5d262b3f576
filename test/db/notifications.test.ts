import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:net'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { Notifications } from '../../src/db/notifications.js'

// The LISTEN connection (PostgreSQL; the webhook dispatcher's and the event streams' hints)
// reconnects once a second while the database is out of reach, one connection at a time. Here the "database" is a loopback port that accepts
// and at once closes every connection, as a load balancer with no primary behind it does: a
// failed connect reports itself more than once (its 'error' or 'end', and the connect's
// rejection), and each report used to start a new listener, doubling them every second.

async function closingServer (): Promise<{ server: Server, url: string, accepted: () => number }> {
  let accepted = 0
  const server = createServer((socket) => { accepted += 1; socket.destroy() })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `postgres://nobody@127.0.0.1:${(server.address() as AddressInfo).port}/none`, accepted: () => accepted }
}

test('without a database, the LISTEN connection is retried once a second, never multiplied', async () => {
  const listenTarget = await closingServer()
  const notifications = new Notifications(listenTarget.url)
  notifications.subscribe('webhook_deliveries', () => {})
  notifications.subscribe('events', () => {})
  await new Promise((resolve) => setTimeout(resolve, 4500))
  const tries = listenTarget.accepted()
  await notifications.stop()
  listenTarget.server.close()
  // One try at once, then one a second: 5 in 4.5 s (doubling would have made 31).
  assert.ok(tries >= 3 && tries <= 6, `${tries} connections in 4.5 s`)
})
