import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchChromium, skipWithoutChromium } from './chromium.js'
import { freePort } from '../../scripts/free-port.mjs'
import { startServer, type ServerProcess } from '../server/process.js'
import { body, logIn, signUpAndLogIn } from './api-client.js'
import { json } from './load.js'

// In a real browser (Debian's Chromium, driven by playwright-core; no browser is downloaded):
// the example page of docs/events.md, served from the API's own origin, opens an EventSource with
// a stream ticket and shows orders as they are placed; the service restarts; the browser
// reconnects by itself with Last-Event-ID and shows the order placed meanwhile, nothing twice.
// Then the interactive reference at /docs renders every operation and webhook of the OpenAPI
// document.

const skip = skipWithoutChromium
const ROOT = join(import.meta.dirname, '..', '..')
const ADMIN = { email: 'root@example.com', password: 'root password' }

/** The example page of docs/events.md: the first html block of its "In a browser" section. */
function examplePage (): string {
  const doc = readFileSync(join(ROOT, 'docs', 'events.md'), 'utf8')
  const section = doc.slice(doc.indexOf('### In a browser'))
  const match = /```html\n([\s\S]*?)```/.exec(section)
  if (match === null) throw new Error('docs/events.md has no html example under "In a browser"')
  return match[1]!
}

test('a browser follows orders live through a restart of the service, then renders the reference', { skip, timeout: 180_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-browser-'))
  const opened: { browser?: Browser } = {}
  let server: ServerProcess | undefined
  after(async () => {
    await opened.browser?.close()
    if (server !== undefined && server.child.exitCode === null) { server.child.kill('SIGTERM'); await server.exit() }
    rmSync(dir, { recursive: true, force: true })
  })
  const env = { DATABASE_URL: `file:${join(dir, 'app.db')}`, PORT: String(await freePort()), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, SHUTDOWN_GRACE_MS: '200' }
  server = startServer(env)
  const base = await server.listening()
  const admin = await logIn(base, ADMIN.email, ADMIN.password)
  const productId = (await body(await fetch(`${base}/v1/products`, json({ name: 'Lamp', price: 1500, category: 'HOME', stock: 100 }, admin)), 201) as { id: number }).id
  const buyer = await signUpAndLogIn(base, 'browser@example.com')
  const order = async (): Promise<number> => (await body(await fetch(`${base}/v1/orders`, json({ productId, quantity: 1 }, buyer.auth)), 201) as { id: number }).id

  const browser = opened.browser = await launchChromium()
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => { problems.push(String(error)) })
  // The example page, on the API's origin (as an application would serve it beside the API).
  await page.route(`${base}/example`, async (route) => { await route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: examplePage() }) })
  await page.addInitScript((token) => { sessionStorage.setItem('token', token) }, buyer.auth.authorization!.slice('Bearer '.length))
  await page.goto(`${base}/example`)
  await server.logged(/"msg":"event stream opened"/)

  // Run in the page (this program is typed without the DOM's types, hence expressions as text).
  const shown = async (): Promise<Array<{ sequence: number, text: string }>> =>
    await page.evaluate("[...document.querySelectorAll('#orders li')].map((li) => ({ sequence: Number(li.dataset.sequence), text: li.textContent ?? '' }))")
  const showsOrder = async (id: number, timeout: number): Promise<void> => {
    await page.waitForFunction(`[...document.querySelectorAll('#orders li')].some((li) => li.textContent?.startsWith('order ${id}:'))`, undefined, { timeout })
  }
  const first = await order()
  await showsOrder(first, 10_000)

  // The service restarts on the same port and file; an order is placed before the browser is back.
  server.child.kill('SIGTERM')
  assert.equal(await server.exit(), 0)
  server = startServer(env)
  await server.listening()
  const second = await order()
  await showsOrder(second, 20_000)
  const third = await order()
  await showsOrder(third, 10_000)
  const items = await shown()
  // It reconnected by itself, from the last event it had.
  assert.match(server.stdout(), /"msg":"event stream opened"[^\n]*"from":"Last-Event-ID"|"from":"Last-Event-ID"[^\n]*"msg":"event stream opened"/)
  t.diagnostic(`figures ${JSON.stringify({ shown: items.map((i) => i.text) })}`)
  assert.deepEqual(items.map((i) => Number(/^order (\d+):/.exec(i.text)?.[1])), [first, second, third], 'each order once, in order')
  assert.ok(items.every((item, i) => i === 0 || item.sequence > items[i - 1]!.sequence))
  assert.deepEqual(problems, [])

  // The interactive reference renders every operation of the document.
  // Every operation: the paths' and the webhooks' (the events the service sends).
  type Operations = Record<string, Record<string, { operationId: string }>>
  const openapi = await (await fetch(`${base}/openapi.json`)).json() as { paths: Operations, webhooks: Operations }
  const operations = [...Object.values(openapi.paths), ...Object.values(openapi.webhooks)].flatMap((methods) => Object.values(methods))
  await page.goto(`${base}/docs`)
  await page.waitForSelector('.opblock', { timeout: 20_000 })
  const rendered: string[] = await page.evaluate("[...document.querySelectorAll('.opblock')].map((block) => block.id)")
  for (const operation of operations) {
    assert.ok(rendered.some((id) => id.endsWith(`-${operation.operationId}`)), `the reference shows ${operation.operationId}`)
  }
  assert.equal(rendered.length, operations.length)
  assert.deepEqual(problems, [])
})
