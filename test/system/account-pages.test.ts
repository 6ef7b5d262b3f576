import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { launchChromium, skipWithoutChromium } from './chromium.js'
import { freePort } from '../../scripts/free-port.mjs'
import { ACCOUNT_PAGES_CSP } from '../../src/accounts/account-pages.js'
import { linkIn, SmtpCapture } from '../support/smtp-capture.js'
import { startServer, type ServerProcess } from '../server/process.js'
import { body, logIn } from './api-client.js'
import { json } from './load.js'

// The pages a person opens from a mail, in a real browser (Debian's Chromium, driven by
// playwright-core), against the real server process sending real mail over SMTP: opening a link
// spends nothing and leaves no token in the address bar, the page loads nothing but its own
// script and stylesheet, pressing the button does the work and says so in words, a used link
// says it is invalid, no CSP violation or script error occurs, and the page fits a phone.

const skip = skipWithoutChromium

const VERIFY_SUBJECT = 'Verify your e-mail address'
const RESET_SUBJECT = 'Reset your password'

interface CurrentUser { email: string, emailVerified: boolean }

async function currentUser (base: string, email: string, password: string): Promise<CurrentUser> {
  const auth = await logIn(base, email, password)
  return (await body(await fetch(`${base}/v1/sessions/current`, { headers: auth }), 200) as { user: CurrentUser }).user
}

// Everything run in the page is a function or a selector, never an expression as text: the
// pages' CSP has no 'unsafe-eval', so Playwright could not evaluate text there.

/** The outcome text the page shows in #result, once it has one other than the pending one. */
async function outcome (page: Page): Promise<string> {
  await page.waitForSelector('#result.success, #result.error', { timeout: 15_000 })
  return await page.locator('#result').textContent() ?? ''
}

/** The document's width, as laid out (a function, not a string: the pages' CSP forbids eval). */
async function scrollWidth (page: Page): Promise<number> {
  return await page.locator('html').evaluate((html) => html.scrollWidth)
}

/** Opens a link and waits until the page's script has read its token (the button is enabled). */
async function open (page: Page, link: URL): Promise<Record<string, string>> {
  const response = await page.goto(link.href)
  assert.ok(response !== null, `no response for ${link.pathname}`)
  assert.equal(response.status(), 200)
  await page.waitForSelector('#submit:not([disabled])', { timeout: 10_000 })
  return response.headers()
}

/** A log-in the API refuses as it refuses a wrong password: 401 INVALID_CREDENTIALS. */
async function refusedLogIn (base: string, email: string, password: string): Promise<void> {
  const res = await fetch(`${base}/v1/sessions`, json({ email, password }))
  assert.equal(res.status, 401)
  assert.equal(((await res.json()) as { code: string }).code, 'INVALID_CREDENTIALS')
}

test('the account pages in a browser: opening spends nothing, the button does, in words, within the CSP, on a phone too', { skip, timeout: 180_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-account-pages-'))
  const opened: { browser?: Browser, smtp?: SmtpCapture, server?: ServerProcess } = {}
  after(async () => {
    await opened.browser?.close()
    const server = opened.server
    if (server !== undefined && server.child.exitCode === null) { server.child.kill('SIGTERM'); await server.exit() }
    await opened.smtp?.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  const smtp = opened.smtp = await SmtpCapture.start()
  const server = opened.server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, PORT: String(await freePort()), SMTP_URL: smtp.url, MAIL_POLL_MS: '100', SHUTDOWN_GRACE_MS: '200' })
  const base = await server.listening()

  const browser = opened.browser = await launchChromium()
  const context = await browser.newContext()
  const page = await context.newPage()
  // Script errors, and console errors: a CSP violation is reported there ("Refused to …").
  const problems: string[] = []
  const watch = (watched: Page, name: string): void => {
    watched.on('pageerror', (error) => { problems.push(`${name} pageerror: ${String(error)}`) })
    watched.on('console', (message) => {
      if (message.type() !== 'error') return
      const { url } = message.location()
      // Chromium logs every 4xx answer as "Failed to load resource". Not faults of the page: the
      // answers of 400 to the API the test provokes (a used link), and the 404 to the browser's
      // own look for an icon (/favicon.ico: the service has none, and the page names none).
      const failed = /^Failed to load resource: the server responded with a status of (\d+)\b/.exec(message.text())?.[1]
      if (failed === '400' && (url === `${base}/v1/email-verifications` || url === `${base}/v1/password-resets`)) return
      if (failed === '404' && url === `${base}/favicon.ico`) { iconLookups += 1; return }
      problems.push(`${name} console: ${message.text()} (${url})`)
    })
  }
  let iconLookups = 0
  watch(page, 'page')
  const requests: string[] = []
  page.on('request', (request) => { requests.push(`${request.method()} ${request.url()}`) })

  // Sign-up mails a verification link.
  const email = 'pages@example.com'
  const password = 'first password'
  await body(await fetch(`${base}/v1/users`, json({ email, password, name: 'Pages' })), 201)
  const verifyMail = await smtp.waitFor((m) => m.to.includes(email) && m.subject === VERIFY_SUBJECT, 15_000)
  const verifyLink = linkIn(verifyMail)
  assert.equal(verifyLink.origin, base)
  assert.equal(verifyLink.pathname, '/account/email-verification')
  assert.match(verifyLink.searchParams.get('token') ?? '', /^[A-Za-z0-9_-]{43}$/)

  // Opening the link spends nothing.
  requests.length = 0
  const headers = await open(page, verifyLink)
  assert.equal(headers['content-security-policy'], ACCOUNT_PAGES_CSP)
  assert.doesNotMatch(headers['content-security-policy'] ?? '', /unsafe/)
  assert.equal(headers['referrer-policy'], 'no-referrer')
  assert.doesNotMatch(page.url(), /token=/, 'the token is gone from the address bar')
  assert.equal(new URL(page.url()).pathname, '/account/email-verification')
  assert.equal((await currentUser(base, email, password)).emailVerified, false, 'opening the page verified nothing')
  assert.deepEqual(requests.map((r) => r.replace(/\?.*$/, '')).sort(),
    [`GET ${base}/account/account.css`, `GET ${base}/account/account.js`, `GET ${base}/account/email-verification`].sort(),
    'the page loaded only itself, its script and its stylesheet')
  assert.equal(requests.find((r) => r.includes('/account/email-verification')), `GET ${verifyLink.href}`)

  // The button does.
  await page.click('#submit')
  assert.match(await outcome(page), /your e-mail address is verified/i)
  assert.equal(await page.getAttribute('#result', 'class'), 'success')
  assert.equal((await currentUser(base, email, password)).emailVerified, true)
  assert.deepEqual(requests.slice(3), [`POST ${base}/v1/email-verifications`])

  // A used link: the button says so, in words.
  await open(page, verifyLink)
  await page.click('#submit')
  const used = await outcome(page)
  assert.match(used, /This link is invalid or has expired\./)
  assert.equal(await page.getAttribute('#result', 'class'), 'error')
  assert.equal(await page.isDisabled('#submit'), true, 'a used token cannot be sent again')

  // Password reset: the mail's link opens the page, which spends nothing either.
  assert.equal((await fetch(`${base}/v1/password-reset-tokens`, json({ email }))).status, 202)
  const resetMail = await smtp.waitFor((m) => m.to.includes(email) && m.subject === RESET_SUBJECT, 15_000)
  const resetLink = linkIn(resetMail)
  assert.equal(resetLink.pathname, '/account/password-reset')
  requests.length = 0
  const resetHeaders = await open(page, resetLink)
  assert.equal(resetHeaders['content-security-policy'], ACCOUNT_PAGES_CSP)
  assert.equal(resetHeaders['referrer-policy'], 'no-referrer')
  assert.doesNotMatch(page.url(), /token=/)
  assert.equal(requests.filter((r) => r.includes('/v1/')).length, 0)

  // Too short a password (7 characters): refused in words, by the browser's own check of the
  // field (nothing is sent) or, if it goes out, with the API's message beside the field.
  await page.fill('#new-password', 'short77')
  await page.click('#submit')
  await page.waitForTimeout(500)
  const resetCalls = (): string[] => requests.filter((r) => r === `POST ${base}/v1/password-resets`)
  if (resetCalls().length === 0) {
    const validation: string = await page.locator('#new-password').evaluate((input) => (input as unknown as { validationMessage: string }).validationMessage)
    t.diagnostic(`a 7-character password is stopped by the browser: ${JSON.stringify(validation)}`)
    assert.equal(await page.locator('#new-password').evaluate((input) => (input as unknown as { validity: { tooShort: boolean } }).validity.tooShort), true)
    assert.match(validation, /\w+ \w+/, 'the browser says why, in words')
  } else {
    assert.equal(resetCalls().length, 1)
    await page.waitForSelector('#new-password-error:not([hidden])', { timeout: 10_000 })
    const fieldError: string = await page.locator('#new-password-error').textContent() ?? ''
    t.diagnostic(`a 7-character password is refused by the API: ${JSON.stringify(fieldError)}`)
    assert.match(fieldError, /^The new password .*8/)
    assert.equal(await page.getAttribute('#new-password', 'aria-invalid'), 'true')
    assert.equal(await page.isDisabled('#submit'), false, 'another password may be tried')
  }
  assert.equal(await page.isVisible('#form'), true)

  // A good one: the same link's token works, so opening the page (and the short try) spent nothing.
  const newPassword = 'second password'
  await page.fill('#new-password', newPassword)
  await page.click('#submit')
  assert.match(await outcome(page), /your password is changed/i)
  assert.equal(await page.getAttribute('#result', 'class'), 'success')
  assert.equal(await page.isVisible('#form'), false)
  assert.equal((await fetch(`${base}/v1/sessions`, json({ email, password: newPassword }))).status, 201)
  await refusedLogIn(base, email, password)

  // The used reset link says so too.
  await open(page, resetLink)
  await page.fill('#new-password', 'third password')
  await page.click('#submit')
  assert.match(await outcome(page), /This link is invalid or has expired\./)
  await refusedLogIn(base, email, 'third password')

  // On a phone: the button is on the screen and nothing is wider than it.
  const phone = await browser.newContext({ viewport: { width: 375, height: 667 } })
  const small = await phone.newPage()
  watch(small, 'phone')
  await open(small, resetLink)
  assert.equal(await small.isVisible('#submit'), true)
  const box = await small.locator('#submit').boundingBox()
  assert.ok(box !== null)
  t.diagnostic(`figures ${JSON.stringify({ phoneButton: box, scrollWidth: await scrollWidth(small) })}`)
  assert.ok(box.x >= 0 && box.y >= 0 && box.x + box.width <= 375 && box.y + box.height <= 667, `the button is within the viewport: ${JSON.stringify(box)}`)
  assert.ok(await scrollWidth(small) <= 375, 'no wider than the phone')
  const inputBox = await small.locator('#new-password').boundingBox()
  assert.ok(inputBox !== null && inputBox.x + inputBox.width <= 375)
  await phone.close()

  t.diagnostic(`figures ${JSON.stringify({ faviconLookups404: iconLookups })}`)
  // The tokens never reach the server's log (the page's address is logged with them redacted).
  const log = server.stdout()
  assert.match(log, /"url":"\/account\/email-verification\?token=\[REDACTED\]"/)
  for (const link of [verifyLink, resetLink]) assert.ok(!log.includes(link.searchParams.get('token')!), 'no token in the log')
  assert.deepEqual(problems, [])
})
