import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import sharp from 'sharp'
import { freePort } from '../../scripts/free-port.mjs'
import { CONSOLE_CSP } from '../../src/console/console.plugin.js'
import { scratchDatabase, type ScratchDatabase } from '../scratch-database.js'
import { startServer, type ServerProcess } from '../server/process.js'
import { startTestProvider, type TestProvider } from '../support/oidc-provider.js'
import { base32Decode, totp } from '../support/rfc6238.js'
import { body, createProduct, logIn, signUpAndLogIn } from './api-client.js'
import { launchChromium, skipWithoutChromium } from './chromium.js'
import { json } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// The operator's console in a real browser (Debian's Chromium, driven by playwright-core),
// served by the service process itself, on each database: sign-in by keyboard, with and without
// a second factor; a user who is not an administrator told the console is not for them and
// shown nothing; the Users screen (search, a user's page, removing their second factor and
// signing them out everywhere, each confirmed); the System screen; signing out. Then the
// shop's screens: a new order appearing live, shipped, a conflict shown, another canceled;
// a product created (a missing price named), edited, given an image (the thumbnail shown, a
// file that is not an image refused in the catalogue's words) and the image removed; a webhook
// endpoint pinged and its delivery redelivered; the Events screen showing a change as it is
// committed. On every screen: no console error and no CSP violation, axe-core finds no serious
// or critical violation, and at 375 px wide nothing scrolls sideways.

const ADMIN = { email: 'operator@example.com', password: 'operator password 1' }
const SECRET_KEY = 'c3'.repeat(32)
// An identity provider that knows the administrator by the same verified address.
const PROVIDER = { id: 'local', clientId: 'resource-api-console', clientSecret: 'a-client-secret-for-the-console-test-0123456789' }
const OPERATOR_AT_PROVIDER = { sub: 'operator-0001', email: ADMIN.email, email_verified: true, name: 'The Operator' }
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

interface Violation { id: string, impact: string | null, help: string, nodes: unknown[] }

/** axe-core's serious and critical violations on the page as it is now (axe served from the page's own origin, as its CSP wants). */
async function seriousViolations (page: Page, base: string): Promise<string[]> {
  await page.route(`${base}/console/axe.min.js`, async (route) => { await route.fulfill({ status: 200, contentType: 'text/javascript', body: AXE }) })
  if (!await page.evaluate(() => 'axe' in globalThis)) await page.addScriptTag({ url: `${base}/console/axe.min.js` })
  const violations = await page.evaluate(async () => ((await (globalThis as unknown as { axe: { run: () => Promise<{ violations: Violation[] }> } }).axe.run()).violations))
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.length})`)
}

/** Whether the page scrolls sideways at its current width. */
async function scrollsSideways (page: Page): Promise<boolean> {
  return await page.locator('html').evaluate((html) => html.scrollWidth > html.clientWidth)
}

/** Checks the screen on show: no serious accessibility violation, nothing sideways at 375 px. */
async function checkScreen (page: Page, base: string, name: string): Promise<void> {
  assert.deepEqual(await seriousViolations(page, base), [], `${name}: axe-core`)
  assert.equal(await scrollsSideways(page), false, `${name}: no sideways scroll at 375 px`)
}

/** An account with a second factor turned on through the API; the secret, to make codes. */
async function withFactor (base: string, email: string): Promise<{ id: number, password: string, secret: Buffer, auth: Record<string, string> }> {
  const password = 'system password'
  const user = await signUpAndLogIn(base, email, password)
  const enrolled = await body(await fetch(`${base}/v1/users/${user.id}/totp`, { method: 'POST', headers: user.auth }), 201) as { secret: string }
  const secret = base32Decode(enrolled.secret)
  await body(await fetch(`${base}/v1/users/${user.id}/totp`, { ...json({ code: totp(secret, { time: Math.floor(Date.now() / 1000) }) }, user.auth), method: 'PUT' }), 200)
  return { ...user, password, secret }
}

async function signIn (page: Page, email: string, password: string): Promise<void> {
  // By keyboard alone from the address field: type, Tab to the password, Enter sends the form.
  await page.locator('#email').focus()
  await page.keyboard.type(email)
  await page.keyboard.press('Tab')
  await page.keyboard.type(password)
  await page.keyboard.press('Enter')
}

/** A page of its own in a 375 px wide context, whose page errors and console errors are collected. */
async function openPage (browser: Browser, base: string): Promise<{ context: BrowserContext, page: Page, problems: string[], provoked: () => number }> {
  const context = await browser.newContext({ viewport: { width: 375, height: 800 } })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => { problems.push(String(error)) })
  let provoked = 0
  page.on('console', (message) => {
    if (message.type() !== 'error' && !/Content.Security.Policy/i.test(message.text())) return
    // Chromium logs every 4xx answer as "Failed to load resource": the refusals a test provokes
    // (a log-in's 401s at /v1/sessions, a 409, 400 or 415 the screen shows) are not the page's faults.
    const failed = /^Failed to load resource: the server responded with a status of (\d+)\b/.exec(message.text())?.[1]
    if (failed !== undefined && ['400', '401', '409', '415'].includes(failed) && message.location().url.startsWith(`${base}/v1/`)) { provoked += 1; return }
    problems.push(`${message.text()} (${message.location().url})`)
  })
  return { context, page, problems, provoked: () => provoked }
}

for (const database of ['sqlite', 'postgres'] as const) {
  const skip = skipWithoutChromium !== false ? skipWithoutChromium : database === 'postgres' && process.env.TEST_DATABASE_URL === undefined ? skipWithoutPostgres : false
  describe(`the console in a browser (${database})`, { skip, timeout: 420_000 }, () => {
    const held: { pg?: PrivatePostgres, db?: ScratchDatabase, server?: ServerProcess, browser?: Browser, files?: string, receiver?: Server, provider?: TestProvider } = {}
    let base = ''
    // What the webhook receiver was sent: each delivery's webhook-id and event type.
    const received: Array<{ id: string, type: string }> = []
    before(async () => {
      let adminUrl: string | undefined
      if (database === 'postgres') {
        adminUrl = process.env.TEST_DATABASE_URL
        if (adminUrl === undefined) adminUrl = (held.pg = await startPrivatePostgres()).url
      }
      held.db = await scratchDatabase('console', adminUrl)
      held.files = mkdtempSync(join(tmpdir(), 'console-files-'))
      const port = await freePort()
      const redirectUris = [`http://127.0.0.1:${port}/console/`]
      const provider = held.provider = await startTestProvider({ clients: [{ clientId: PROVIDER.clientId, clientSecret: PROVIDER.clientSecret, redirectUris }], accounts: [OPERATOR_AT_PROVIDER] })
      const server = held.server = startServer({
        DATABASE_URL: held.db.url, PORT: String(port), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, SECRET_KEY, SHUTDOWN_GRACE_MS: '200',
        STORAGE_URL: `file://${held.files}`, WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '100', WEBHOOK_TIMEOUT_MS: '2000',
        OIDC_PROVIDERS: JSON.stringify([{ id: PROVIDER.id, issuer: provider.issuer, clientId: PROVIDER.clientId, clientSecret: PROVIDER.clientSecret, redirectUris }]), OIDC_TIMEOUT_SECONDS: '5'
      })
      base = await server.listening()
      held.receiver = createServer((request, response) => {
        let text = ''
        request.setEncoding('utf8')
        request.on('data', (chunk: string) => { text += chunk })
        request.on('end', () => {
          received.push({ id: String(request.headers['webhook-id']), type: (JSON.parse(text) as { type: string }).type })
          response.writeHead(204).end()
        })
      })
      await new Promise<void>((resolve) => { held.receiver!.listen(0, '127.0.0.1', resolve) })
      held.browser = await launchChromium()
    }, { timeout: 120_000 })
    after(async () => {
      await held.browser?.close()
      held.receiver?.close()
      await held.provider?.close()
      if (held.server !== undefined && held.server.child.exitCode === null) { held.server.child.kill('SIGTERM'); await held.server.exit() }
      await held.db?.drop()
      held.pg?.destroy()
      if (held.files !== undefined) rmSync(held.files, { recursive: true, force: true })
    })

    test('sign-in with and without a second factor, Users, System, sign-out; no error, no CSP violation, no serious axe finding, nothing sideways at 375 px', { timeout: 180_000 }, async () => {
      const ada = await withFactor(base, 'ada@example.com')
      const { context, page, problems, provoked } = await openPage(held.browser!, base)

      // The page and its policy.
      const opened = await page.goto(`${base}/console/#/users`)
      assert.equal(opened?.status(), 200)
      assert.equal(opened?.headers()['content-security-policy'], CONSOLE_CSP)
      assert.equal(opened?.headers()['referrer-policy'], 'no-referrer')
      await page.waitForSelector('#email')
      await checkScreen(page, base, 'sign-in')

      // A user with a second factor: the code is asked for, then the console refuses them.
      await signIn(page, 'ada@example.com', ada.password)
      await page.waitForSelector('#code')
      assert.equal(await page.locator('#code').inputValue(), '', 'the code field starts empty (never the password)')
      await page.locator('#code').focus()
      await page.keyboard.type(totp(ada.secret, { time: Math.floor(Date.now() / 1000) + 30 }))
      await page.keyboard.press('Enter')
      await page.getByText('This console is for administrators.').waitFor({ timeout: 10_000 }).catch(async (error: unknown) => { throw new Error(`${String(error)}\npage: ${await page.locator('body').innerText()}\nproblems: ${problems.join(' | ')}`) })
      assert.equal(await page.locator('nav').count(), 0, 'no navigation, no data')
      await checkScreen(page, base, 'refused')
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.waitForSelector('#email')
      assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the token is gone with the sign-out')

      // A wrong password: the catalogue's words.
      await signIn(page, ADMIN.email, 'not the password')
      await page.getByRole('alert').waitFor()
      assert.match(await page.getByRole('alert').textContent() ?? '', /The e-mail address or password is incorrect\./)

      // The administrator: Users first.
      await page.locator('#email').fill('')
      await page.locator('#password').fill('')
      await signIn(page, ADMIN.email, ADMIN.password)
      const nav = page.getByRole('navigation', { name: 'Console' })
      await nav.waitFor()
      assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage')
      assert.deepEqual((await context.cookies()).length, 0, 'no cookie')
      await page.getByRole('heading', { name: 'Users' }).waitFor()
      await page.getByRole('link', { name: 'ada@example.com' }).waitFor()
      await checkScreen(page, base, 'users')

      await page.getByLabel('Address or name (3 characters or more)').fill('ada@')
      await page.keyboard.press('Enter')
      await page.getByRole('link', { name: 'ada@example.com' }).click()
      await page.getByRole('heading', { name: 'ada@example.com' }).waitFor()
      await page.getByText('No orders.').waitFor()
      await checkScreen(page, base, 'a user')

      // Remove the second factor, confirmed.
      const confirmations: string[] = []
      page.on('dialog', (dialog) => { confirmations.push(dialog.message()); void dialog.accept() })
      await page.getByRole('button', { name: 'Remove second factor' }).click()
      await page.getByRole('status').filter({ hasText: 'The second factor was removed' }).waitFor()
      const adaAgain = await logIn(base, 'ada@example.com', ada.password)
      await body(await fetch(`${base}/v1/sessions/current`, { headers: adaAgain }), 200)

      // Sign Ada out everywhere, confirmed: the session just made ends.
      await page.getByRole('button', { name: 'Sign out everywhere' }).click()
      await page.getByRole('status').filter({ hasText: 'Every session of this account has ended.' }).waitFor()
      assert.equal((await fetch(`${base}/v1/sessions/current`, { headers: adaAgain })).status, 401)
      assert.equal(confirmations.length, 2)
      assert.match(confirmations[0]!, /Remove the second factor of ada@example.com/)
      assert.match(confirmations[1]!, /Sign ada@example.com out of every session/)

      // System.
      await nav.getByRole('link', { name: 'System' }).click()
      await page.getByRole('heading', { name: 'System' }).waitFor()
      await page.getByText(database === 'sqlite' ? 'SQLite' : 'PostgreSQL', { exact: true }).waitFor()
      await checkScreen(page, base, 'system')

      // Sign out: the session is over on the server too.
      const token = await page.evaluate(() => sessionStorage.getItem('console.token'))
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.waitForSelector('#email')
      assert.equal((await fetch(`${base}/v1/sessions/current`, { headers: { authorization: `Bearer ${token ?? ''}` } })).status, 401)

      assert.deepEqual(problems, [])
      assert.ok(provoked() <= 2, `${provoked()} log-in refusals logged`)
      await context.close()
    })

    test('Orders live, shipped, a conflict shown, canceled; a product created, edited, given an image picked and one dropped, both removed; a webhook pinged and redelivered; Events live', { timeout: 240_000 }, async () => {
      const admin = await logIn(base, ADMIN.email, ADMIN.password)
      const adminId = (await body(await fetch(`${base}/v1/sessions/current`, { headers: admin }), 200) as { user: { id: number } }).user.id
      const productId = await createProduct(base, admin, 10)
      const bob = await signUpAndLogIn(base, 'bob@example.com')
      const order = async (): Promise<number> => (await body(await fetch(`${base}/v1/orders`, json({ productId, quantity: 1 }, bob.auth)), 201) as { id: number }).id
      const orderStatus = async (id: number): Promise<string> => (await body(await fetch(`${base}/v1/orders/${id}`, { headers: admin }), 200) as { status: string }).status
      const { context, page, problems } = await openPage(held.browser!, base)
      const confirmations: string[] = []
      page.on('dialog', (dialog) => { confirmations.push(dialog.message()); void dialog.accept() })

      await page.goto(`${base}/console/`)
      await signIn(page, ADMIN.email, ADMIN.password)
      const nav = page.getByRole('navigation', { name: 'Console' })
      await nav.waitFor()
      assert.deepEqual(await nav.getByRole('link').allTextContents(), ['Orders', 'Products', 'Users', 'Webhooks', 'Events', 'System'])

      // Orders, the first screen: an order placed now appears without a reload.
      await page.getByRole('heading', { name: 'Orders' }).waitFor()
      await page.getByText('Live: new orders appear here as they are placed.').waitFor()
      await page.getByText('No orders.').waitFor() // the list is read: what comes now comes by the stream
      const first = await order()
      await page.getByRole('link', { name: `Order ${first}`, exact: true }).waitFor({ timeout: 15_000 })
      await checkScreen(page, base, 'orders')

      // Shipped; then a cancellation the service refuses (409), shown in the catalogue's words.
      await page.getByRole('link', { name: `Order ${first}`, exact: true }).click()
      await page.getByRole('heading', { name: `Order ${first}` }).waitFor()
      await page.getByRole('button', { name: 'Mark as shipped' }).click()
      await page.getByRole('status').filter({ hasText: 'The order is marked as shipped.' }).waitFor()
      assert.equal(await orderStatus(first), 'SHIPPED')
      await page.getByRole('button', { name: 'Cancel order' }).click()
      await page.getByRole('alert').filter({ hasText: 'The order can no longer be canceled.' }).waitFor()
      assert.equal(await orderStatus(first), 'SHIPPED')
      await checkScreen(page, base, 'an order')

      // The paid ones: the second order, canceled (confirmed); its unit back in stock.
      const second = await order()
      await nav.getByRole('link', { name: 'Orders' }).click()
      await page.getByLabel('Status').selectOption('PAID')
      await page.getByRole('link', { name: `Order ${second}`, exact: true }).click()
      await page.getByRole('button', { name: 'Cancel order' }).click()
      await page.getByRole('status').filter({ hasText: 'The order is canceled.' }).waitFor()
      assert.equal(await orderStatus(second), 'CANCELED')
      assert.deepEqual(confirmations, [`Cancel order ${first}? Its units go back to stock.`, `Cancel order ${second}? Its units go back to stock.`])

      // Products: a new one (a missing price named first), edited.
      await nav.getByRole('link', { name: 'Products' }).click()
      await page.getByRole('heading', { name: 'Products' }).waitFor()
      await checkScreen(page, base, 'products')
      await page.getByRole('link', { name: 'New product' }).click()
      await page.getByLabel('Name').fill('Linen apron')
      await page.getByLabel('Category').selectOption('HOME')
      await page.getByLabel('Stock').fill('7')
      await page.getByRole('button', { name: 'Create product' }).click()
      await page.getByRole('alert').locator('code', { hasText: 'price' }).waitFor()
      await checkScreen(page, base, 'a new product')
      await page.getByLabel(/^Price/).fill('2400')
      await page.getByRole('button', { name: 'Create product' }).click()
      await page.getByRole('heading', { name: 'Linen apron' }).waitFor()
      const created = Number(/#\/products\/(\d+)$/.exec(page.url())?.[1])
      const product = async (): Promise<{ price: number, stock: number, category: string, images: unknown[] }> => await body(await fetch(`${base}/v1/products/${created}`), 200) as { price: number, stock: number, category: string, images: unknown[] }
      assert.deepEqual({ ...await product(), images: [] }, { ...await product(), price: 2400, stock: 7, category: 'HOME', images: [] })
      await page.getByLabel(/^Price/).fill('2500')
      await page.getByRole('button', { name: 'Save product' }).click()
      await page.getByRole('status').filter({ hasText: 'The product is saved.' }).waitFor()
      assert.equal((await product()).price, 2500)

      // An image: added by picking the file, its thumbnail shown from the service; a text file
      // named like a picture refused by its bytes; the image removed, confirmed.
      const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c03020' } }).png().toBuffer()
      await page.getByLabel(/^Add images/).setInputFiles({ name: 'apron.png', mimeType: 'image/png', buffer: png })
      await page.getByRole('status').filter({ hasText: 'The image is added.' }).waitFor()
      const thumbnail = page.getByRole('img', { name: 'Image 1 of Linen apron' })
      await thumbnail.waitFor()
      // decode() fails for an image the browser could not load: the thumbnail came from the service.
      assert.equal(await thumbnail.evaluate(async (img) => { const loaded = img as unknown as { decode: () => Promise<void>, naturalWidth: number }; await loaded.decode(); return loaded.naturalWidth }), 64)
      assert.equal((await product()).images.length, 1)
      await checkScreen(page, base, 'a product')
      await page.getByLabel(/^Add images/).setInputFiles({ name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('not a picture at all') })
      await page.getByRole('alert').filter({ hasText: 'notes.png: The file is not a JPEG, PNG, WebP, AVIF or GIF image (judged by its bytes).' }).waitFor()
      assert.equal((await product()).images.length, 1)
      // A second, dropped on the box.
      const dropped = await page.evaluateHandle(async (bytes) => {
        const browser = globalThis as unknown as { DataTransfer: new () => { items: { add: (file: unknown) => void } }, File: new (parts: unknown[], name: string, options: { type: string }) => unknown }
        const transfer = new browser.DataTransfer()
        transfer.items.add(new browser.File([new Uint8Array(bytes)], 'dropped.png', { type: 'image/png' }))
        return transfer
      }, [...await sharp({ create: { width: 40, height: 40, channels: 3, background: '#2040c0' } }).png().toBuffer()])
      await page.locator('.drop').dispatchEvent('drop', { dataTransfer: dropped })
      await page.getByRole('img', { name: 'Image 2 of Linen apron' }).waitFor()
      assert.equal((await product()).images.length, 2)
      await page.getByRole('button', { name: 'Remove image 1' }).click()
      await page.getByRole('status').filter({ hasText: 'The image is removed.' }).waitFor()
      await page.getByRole('img', { name: 'Image 2 of Linen apron' }).waitFor({ state: 'detached' })
      assert.equal((await product()).images.length, 1)
      await page.getByRole('button', { name: 'Remove image 1' }).click()
      await page.getByText('No images.').waitFor()
      assert.equal((await product()).images.length, 0)
      assert.match(confirmations.at(-1)!, /^Remove image \d+ of Linen apron\?/)

      // Webhooks: an endpoint, pinged; the ping redelivered under the same event id.
      const address = held.receiver!.address() as { port: number }
      const hook = `http://127.0.0.1:${address.port}/hooks`
      await body(await fetch(`${base}/v1/webhook-endpoints`, json({ url: hook, events: ['product.updated'] }, admin)), 201)
      await nav.getByRole('link', { name: 'Webhooks' }).click()
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor()
      await page.getByRole('link', { name: hook }).click()
      await page.getByRole('heading', { name: hook }).waitFor()
      await page.getByText('No deliveries yet.').waitFor()
      await page.getByRole('button', { name: 'Ping' }).click()
      const pinged = Number(/Ping sent as delivery (\d+)\./.exec(await page.getByRole('status').filter({ hasText: 'Ping sent' }).textContent() ?? '')?.[1])
      await page.getByRole('button', { name: `Redeliver delivery ${pinged}` }).click()
      await page.getByRole('status').filter({ hasText: `Delivery ${pinged} is sent again as delivery` }).waitFor()
      await checkScreen(page, base, 'a webhook endpoint')
      for (let waited = 0; received.length < 2; waited += 100) {
        assert.ok(waited < 15_000, `the receiver was sent ${received.length} of 2 deliveries in 15 s`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.deepEqual(received.map((r) => r.type), ['webhook.ping', 'webhook.ping'])
      assert.equal(received[0]!.id, received[1]!.id, 'a redelivery carries the event\'s id')

      // Events: a change committed now appears, naming who made it.
      await nav.getByRole('link', { name: 'Events' }).click()
      await page.getByText('Live: events appear here as they are committed.').waitFor()
      await body(await fetch(`${base}/v1/products/${created}`, { ...json({ stock: 8 }, admin), method: 'PATCH' }), 200)
      await page.getByRole('listitem').filter({ hasText: `product.updated · product ${created}` }).filter({ hasText: `by user ${adminId}` }).waitFor({ timeout: 15_000 })
      await checkScreen(page, base, 'events')

      assert.deepEqual(problems, [])
      await context.close()
    })

    test('sign-in with the identity provider\'s button: back at /console/ signed in, the code gone from the address; a code and state not begun here refused', { timeout: 120_000 }, async () => {
      const { context, page, problems } = await openPage(held.browser!, base)
      const issuer = held.provider!.issuer
      // The provider's development pages are not under test: their console errors are theirs;
      // their web font, the one thing off loopback, is answered empty.
      await context.route((url) => url.hostname !== '127.0.0.1', async (route) => { await route.fulfill({ status: 200, contentType: 'text/css', body: '' }) })
      await page.goto(`${base}/console/`)
      await page.getByRole('button', { name: 'Sign in with local' }).click()
      await page.waitForSelector('input[name="login"]', { timeout: 20_000 })
      assert.equal(new URL(page.url()).origin, issuer)
      await page.fill('input[name="login"]', OPERATOR_AT_PROVIDER.sub)
      await page.fill('input[name="password"]', 'any password at all')
      await page.click('button[type="submit"]')
      await page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached', timeout: 20_000 })
      await page.click('button[type="submit"]')
      await page.waitForURL((url) => url.origin === base && url.pathname === '/console/', { timeout: 20_000 })
      await page.getByRole('navigation', { name: 'Console' }).waitFor()
      await page.getByText(ADMIN.email).waitFor()
      assert.equal(new URL(page.url()).search, '', 'the code and state are gone from the address')
      const token = await page.evaluate(() => sessionStorage.getItem('console.token'))
      const current = await body(await fetch(`${base}/v1/sessions/current`, { headers: { authorization: `Bearer ${token ?? ''}` } }), 200) as { user: { email: string, role: string } }
      assert.deepEqual(current.user.role, 'ADMIN')
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.waitForSelector('#email')

      // A code and state this tab did not begin (login CSRF): refused before the API is asked.
      const asked: string[] = []
      page.on('request', (request) => { if (request.url().startsWith(`${base}/v1/sessions`)) asked.push(request.method()) })
      await page.goto(`${base}/console/?code=attackers-code&state=attackers-state`)
      await page.getByRole('alert').filter({ hasText: 'This sign-in was not begun in this browser.' }).waitFor()
      assert.deepEqual(asked, [])
      assert.deepEqual(problems.filter((problem) => !problem.includes(issuer)), [])
      await context.close()
    })
  })
}
