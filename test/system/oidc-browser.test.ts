import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { launchChromium, skipWithoutChromium } from './chromium.js'
import { freePort } from '../../scripts/free-port.mjs'
import { startTestProvider, type TestProvider } from '../support/oidc-provider.js'
import { startServer, type ServerProcess } from '../server/process.js'
import { body } from './api-client.js'

// Sign-in with an identity provider in a real browser (Debian's Chromium, driven by
// playwright-core), from a client's page on another origin to a session: the page asks the
// service to begin the sign-in and sends the browser to the provider (panva's oidc-provider on
// loopback, its development log-in and consent pages), which sends it back to the client's
// /signed-in page; that page's script passes `code` and `state` to POST /v1/sessions across
// origins (CORS) and shows who signed in. Opening the same address again finishes nothing, and
// a second sign-in, the provider remembering the person, reaches the same account.

const skip = skipWithoutChromium

const PROVIDER_ID = 'local'
const ADA = { sub: 'ada-0001', email: 'ada@example.com', email_verified: true, name: 'Ada Lovelace' }
const CLIENT_ID = 'resource-api-browser'
const CLIENT_SECRET = 'a-client-secret-for-the-browser-test-0123456789'

// The client's pages: no inline script (the CSP forbids it), each script its own file.

const START_JS = `
const api = document.body.dataset.api
const result = document.getElementById('result')
document.getElementById('sign-in').addEventListener('click', async () => {
  result.className = 'pending'
  result.textContent = 'Sending you to the provider…'
  try {
    const res = await fetch(api + '/v1/oidc-authorizations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ provider: document.body.dataset.provider, redirectUri: new URL('/signed-in', location.href).href })
    })
    const answer = await res.json()
    if (res.status !== 201) throw new Error(answer.code + ': ' + answer.message)
    // Kept to compare on the way back: only this page can tell a sign-in this browser began
    // from one an attacker began and sent it into (login CSRF).
    sessionStorage.setItem('signInState', new URL(answer.authorizationUrl).searchParams.get('state'))
    location.assign(answer.authorizationUrl)
  } catch (error) {
    result.className = 'error'
    result.textContent = String(error.message ?? error)
  }
})
`

const SIGNED_IN_JS = `
const api = document.body.dataset.api
const result = document.getElementById('result')
const show = (id, text) => { document.getElementById(id).textContent = text }
async function finish () {
  const params = new URLSearchParams(location.search)
  if (params.has('error')) throw new Error('the provider answered ' + params.get('error'))
  if (params.get('state') !== sessionStorage.getItem('signInState')) throw new Error('This sign-in was not begun in this browser.')
  const res = await fetch(api + '/v1/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ provider: document.body.dataset.provider, code: params.get('code'), state: params.get('state') })
  })
  const session = await res.json()
  if (res.status !== 201) throw new Error(session.code + ': ' + session.message)
  const current = await fetch(api + '/v1/sessions/current', { headers: { authorization: 'Bearer ' + session.token } })
  show('current-status', String(current.status))
  const me = await current.json()
  show('user-id', String(me.user.id))
  show('email', me.user.email)
  show('email-verified', String(me.user.emailVerified))
  show('name', me.user.name)
  show('token', session.token)
  result.className = 'success'
  result.textContent = 'Signed in as ' + me.user.email
}
finish().catch((error) => {
  result.className = 'error'
  result.textContent = String(error.message ?? error)
})
`

function pageHtml (title: string, script: string, api: string, content: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${title}</title><script src="${script}" defer></script></head>
<body data-api="${api}" data-provider="${PROVIDER_ID}">
<h1>${title}</h1>
${content}
<p id="result" class="pending" role="status"></p>
</body>
</html>
`
}

const SIGNED_IN_CONTENT = `<dl>
<dt>Account</dt><dd id="user-id"></dd>
<dt>E-mail</dt><dd id="email"></dd>
<dt>E-mail verified</dt><dd id="email-verified"></dd>
<dt>Name</dt><dd id="name"></dd>
<dt>GET /v1/sessions/current</dt><dd id="current-status"></dd>
<dt>Token</dt><dd id="token"></dd>
</dl>`

/** The client's little site on loopback: a start page, the redirect page, their scripts. */
async function startClientPages (api: () => string): Promise<{ base: string, server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname
    const send = (status: number, type: string, text: string): void => {
      res.writeHead(status, {
        'content-type': type,
        'cache-control': 'no-store',
        // Scripts only from this origin, requests only to the API: a stray inline script or a
        // request elsewhere shows as a console error. The code never goes on in a Referer.
        'content-security-policy': `default-src 'none'; script-src 'self'; connect-src ${api()}; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        'referrer-policy': 'no-referrer'
      })
      res.end(text)
    }
    if (req.method !== 'GET') send(405, 'text/plain', 'method not allowed')
    else if (path === '/start') send(200, 'text/html; charset=utf-8', pageHtml('Sign in', '/start.js', api(), '<button id="sign-in" type="button">Sign in with the local provider</button>'))
    else if (path === '/start.js') send(200, 'text/javascript; charset=utf-8', START_JS)
    else if (path === '/signed-in') send(200, 'text/html; charset=utf-8', pageHtml('Signed in', '/signed-in.js', api(), SIGNED_IN_CONTENT))
    else if (path === '/signed-in.js') send(200, 'text/javascript; charset=utf-8', SIGNED_IN_JS)
    // The browser's own look for an icon.
    else if (path === '/favicon.ico') { res.writeHead(204); res.end() } else send(404, 'text/plain', 'not found')
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => { server.off('error', reject); resolve() })
  })
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

/** The outcome the /signed-in page shows, once it has one. */
async function outcome (page: Page): Promise<{ kind: string, text: string }> {
  await page.waitForSelector('#result.success, #result.error', { timeout: 20_000 })
  return { kind: await page.getAttribute('#result', 'class') ?? '', text: await page.locator('#result').textContent() ?? '' }
}

const text = async (page: Page, selector: string): Promise<string> => await page.locator(selector).textContent() ?? ''

test('sign-in with an identity provider in a browser: start page, provider log-in and consent, back to a session', { skip, timeout: 180_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-oidc-browser-'))
  const opened: { browser?: Browser, server?: ServerProcess, provider?: TestProvider, pages?: Server } = {}
  after(async () => {
    await opened.browser?.close()
    const server = opened.server
    if (server !== undefined && server.child.exitCode === null) { server.child.kill('SIGTERM'); await server.exit() }
    await opened.provider?.close()
    const pages = opened.pages
    if (pages?.listening === true) {
      const closed = new Promise<void>((resolve) => { pages.close(() => { resolve() }) })
      pages.closeAllConnections()
      await closed
    }
    rmSync(dir, { recursive: true, force: true })
  })

  // The client's pages first: the provider and the service must know their address.
  let api = ''
  const client = await startClientPages(() => api)
  opened.pages = client.server
  const redirectUri = `${client.base}/signed-in`
  const provider = opened.provider = await startTestProvider({
    clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [redirectUri] }],
    accounts: [ADA]
  })
  const server = opened.server = startServer({
    DATABASE_URL: `file:${join(dir, 'app.db')}`,
    PORT: String(await freePort()),
    SHUTDOWN_GRACE_MS: '200',
    OIDC_PROVIDERS: JSON.stringify([{ id: PROVIDER_ID, issuer: provider.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [redirectUri] }]),
    OIDC_TIMEOUT_SECONDS: '5',
    CORS_ORIGINS: client.base
  })
  api = await server.listening()

  const browser = opened.browser = await launchChromium()
  const context = await browser.newContext()
  // Loopback only: the provider's development pages import a web font from Google, which is
  // answered here with an empty stylesheet; anything else off loopback is refused and noted.
  const offLoopback: string[] = []
  await context.route((url) => url.hostname !== '127.0.0.1', async (route) => {
    const url = new URL(route.request().url())
    offLoopback.push(url.origin)
    if (url.hostname === 'fonts.googleapis.com') await route.fulfill({ status: 200, contentType: 'text/css', body: '' })
    else await route.abort('blockedbyclient')
  })
  const page = await context.newPage()
  const problems: string[] = []
  const providerNotes: string[] = []
  let expectRefusal = false
  page.on('pageerror', (error) => { problems.push(`pageerror: ${String(error)}`) })
  page.on('console', (message) => {
    if (message.type() !== 'error') return
    const { url } = message.location()
    // The provider's pages are not under test here; what they log is reported, not asserted.
    if (url.startsWith(provider.issuer) || url.startsWith('https://fonts.googleapis.com')) { providerNotes.push(`${message.text()} (${url})`); return }
    // Chromium logs every 4xx answer as "Failed to load resource": the 400 the test provokes by
    // finishing a used sign-in again is the API's answer, not a fault of the page.
    const failed = /^Failed to load resource: the server responded with a status of (\d+)\b/.exec(message.text())?.[1]
    if (failed === '400' && url === `${api}/v1/sessions` && expectRefusal) return
    problems.push(`console: ${message.text()} (${url})`)
  })
  const requests: string[] = []
  page.on('request', (request) => { requests.push(`${request.method()} ${request.url().replace(/\?.*$/, '')}`) })

  // The start page: pressing the button begins the sign-in and leaves for the provider.
  const started = Date.now()
  const start = await page.goto(`${client.base}/start`)
  assert.equal(start?.status(), 200)
  await page.click('#sign-in')

  // The provider's log-in page (any password will do for its development pages).
  await page.waitForSelector('input[name="login"]', { timeout: 20_000 })
  const loginUrl = new URL(page.url())
  assert.equal(loginUrl.origin, provider.issuer)
  assert.match(loginUrl.pathname, /^\/interaction\//)
  await page.fill('input[name="login"]', ADA.sub)
  await page.fill('input[name="password"]', 'any password at all')
  await page.click('button[type="submit"]')

  // Its consent page: one button, "Continue".
  await page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached', timeout: 20_000 })
  assert.equal(new URL(page.url()).origin, provider.issuer)
  await page.click('button[type="submit"]')

  // Back on the client's page, which finishes the sign-in.
  await page.waitForURL((url) => url.origin === client.base && url.pathname === '/signed-in', { timeout: 20_000 })
  const back = new URL(page.url())
  assert.ok((back.searchParams.get('code') ?? '') !== '', 'the provider sent a code')
  assert.ok((back.searchParams.get('state') ?? '') !== '', 'and the state')
  assert.equal(back.searchParams.get('iss'), provider.issuer, 'and its issuer (RFC 9207)')
  const first = await outcome(page)
  const elapsedMs = Date.now() - started
  assert.equal(first.kind, 'success', first.text)
  assert.equal(first.text, `Signed in as ${ADA.email}`)
  assert.equal(await text(page, '#email'), ADA.email)
  assert.equal(await text(page, '#email-verified'), 'true', 'the provider verified the address, and said so')
  assert.equal(await text(page, '#name'), ADA.name)
  assert.equal(await text(page, '#current-status'), '200', 'the token works from the page, across origins')
  const userId = Number(await text(page, '#user-id'))
  assert.ok(Number.isInteger(userId) && userId > 0)

  // The API calls the pages made, in order, and nothing else of the API's.
  assert.deepEqual(requests.filter((r) => r.includes(api)), [
    `POST ${api}/v1/oidc-authorizations`,
    `POST ${api}/v1/sessions`,
    `GET ${api}/v1/sessions/current`
  ])

  // The token the page got works outside the browser too, and the account is linked to the provider.
  const token = await text(page, '#token')
  assert.match(token, /^[A-Za-z0-9_-]{20,}$/)
  const auth = { authorization: `Bearer ${token}` }
  const current = await body(await fetch(`${api}/v1/sessions/current`, { headers: auth }), 200) as { tokenType: string, user: { id: number, email: string, emailVerified: boolean, role: string, pendingEmail: unknown } }
  assert.equal(current.tokenType, 'Bearer')
  assert.deepEqual({ ...current.user }, { id: userId, email: ADA.email, name: ADA.name, role: 'USER', emailVerified: true, pendingEmail: null })
  const identities = await body(await fetch(`${api}/v1/users/${userId}/identities`, { headers: auth }), 200) as Array<{ provider: string, subject: string, email: string }>
  assert.deepEqual(identities.map(({ provider, subject, email }) => ({ provider, subject, email })), [{ provider: PROVIDER_ID, subject: ADA.sub, email: ADA.email }])

  // The same address opened again (a reload): the sign-in is spent, the page says so.
  expectRefusal = true
  await page.reload()
  const again = await outcome(page)
  assert.equal(again.kind, 'error')
  assert.match(again.text, /^INVALID_TOKEN: /)

  // A sign-in begun elsewhere (an attacker's own code and state, the victim's browser sent to
  // the page): the page refuses it before asking the API (login CSRF).
  requests.length = 0
  await page.goto(`${client.base}/signed-in?code=attackers-code&state=attackers-state`)
  const forged = await outcome(page)
  assert.equal(forged.kind, 'error')
  assert.equal(forged.text, 'This sign-in was not begun in this browser.')
  assert.deepEqual(requests.filter((r) => r.includes(api)), [])
  expectRefusal = false

  // A second sign-in in the same browser: the provider remembers the person (and their consent)
  // and sends them straight back; the same account, a new session.
  requests.length = 0
  await page.goto(`${client.base}/start`)
  await page.click('#sign-in')
  await page.waitForURL((url) => url.origin === client.base && url.pathname === '/signed-in', { timeout: 20_000 })
  const second = await outcome(page)
  assert.equal(second.kind, 'success', second.text)
  assert.equal(Number(await text(page, '#user-id')), userId, 'the linked account')
  const secondToken = await text(page, '#token')
  assert.notEqual(secondToken, token)
  const interactionPages = requests.filter((r) => r.startsWith(`GET ${provider.issuer}/interaction/`)).length
  // Both sessions live.
  for (const bearer of [token, secondToken]) await body(await fetch(`${api}/v1/sessions/current`, { headers: { authorization: `Bearer ${bearer}` } }), 200)

  t.diagnostic(`figures ${JSON.stringify({ msFromStartPageToSession: elapsedMs, secondSignInInteractionPages: interactionPages, offLoopback: [...new Set(offLoopback)], providerConsoleErrors: providerNotes.length })}`)
  // Neither the provider's code nor the token reaches the service's log.
  const log = server.stdout()
  assert.ok(!log.includes(back.searchParams.get('code')!), 'no code in the log')
  assert.ok(!log.includes(token), 'no token in the log')
  assert.deepEqual([...new Set(offLoopback)].filter((origin) => origin !== 'https://fonts.googleapis.com'), [], 'nothing off loopback but the provider page\'s font')
  assert.deepEqual(problems, [])
})
