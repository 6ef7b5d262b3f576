import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchChromium, skipWithoutChromium } from './chromium.js'
import sharp from 'sharp'
import { freePort } from '../../scripts/free-port.mjs'
import { startServer, type ServerProcess } from '../server/process.js'
import { signUpAndLogIn } from './api-client.js'

// In a real browser (Debian's Chromium, driven by playwright-core): the upload page of
// docs/files.md, served from the API's own origin, sends a picture picked in its file input as a
// form, and shows the thumbnail the answer names; the image the browser draws is the variant
// (200 pixels wide), served with the file's sandboxing headers, and nothing fails on the page.

const skip = skipWithoutChromium
const ROOT = join(import.meta.dirname, '..', '..')

/** The example page of docs/files.md: the html block of its "From a web page" section. */
function examplePage (base: string): string {
  const doc = readFileSync(join(ROOT, 'docs', 'files.md'), 'utf8')
  const section = doc.slice(doc.indexOf('### From a web page'))
  const match = /```html\n([\s\S]*?)```/.exec(section)
  if (match === null) throw new Error('docs/files.md has no html example under "From a web page"')
  const page = match[1]!
  if (!page.includes("'https://api.example.com/v1'")) throw new Error('the example page no longer names https://api.example.com/v1')
  return page.replace("'https://api.example.com/v1'", `'${base}/v1'`)
}

test('a browser uploads a picture from the example page and shows its thumbnail', { skip, timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-image-browser-'))
  const opened: { browser?: Browser, server?: ServerProcess } = {}
  after(async () => {
    await opened.browser?.close()
    const server = opened.server
    if (server !== undefined && server.child.exitCode === null) { server.child.kill('SIGTERM'); await server.exit() }
    rmSync(dir, { recursive: true, force: true })
  })
  const server = opened.server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, STORAGE_URL: `file:${join(dir, 'files')}`, PORT: String(await freePort()), SHUTDOWN_GRACE_MS: '200' })
  const base = await server.listening()
  const user = await signUpAndLogIn(base, 'pictures@example.com')
  const token = user.auth.authorization!.slice('Bearer '.length)

  const browser = opened.browser = await launchChromium()
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => { problems.push(String(error)) })
  page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()) })
  const answers: Array<{ url: string, status: number, headers: Record<string, string> }> = []
  page.on('response', (response) => { answers.push({ url: response.url(), status: response.status(), headers: response.headers() }) })
  await page.route(`${base}/example`, async (route) => { await route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: examplePage(base) }) })
  await page.addInitScript((session) => { sessionStorage.setItem('session', session) }, JSON.stringify({ token, user: { id: user.id } }))
  await page.goto(`${base}/example`)

  const picture = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 30, g: 160, b: 90 } } }).jpeg().toBuffer()
  await page.setInputFiles('#avatar input[type=file]', { name: 'holiday.jpg', mimeType: 'image/jpeg', buffer: picture })
  await page.click('#avatar button')
  // Drawn: the thumbnail's pixels, as the browser decoded them.
  await page.waitForFunction("document.querySelector('#picture').complete && document.querySelector('#picture').naturalWidth > 0", undefined, { timeout: 20_000 })
  const drawn: { src: string, width: number, height: number } = await page.evaluate("({ src: document.querySelector('#picture').src, width: document.querySelector('#picture').naturalWidth, height: document.querySelector('#picture').naturalHeight })")
  assert.match(drawn.src, new RegExp(`^${base}/v1/files/\\d+/thumb$`))
  assert.deepEqual([drawn.width, drawn.height], [200, 150])

  const upload = answers.find((answer) => answer.url === `${base}/v1/users/${user.id}/avatar`)
  assert.equal(upload?.status, 200)
  const thumb = answers.find((answer) => answer.url === drawn.src)
  assert.equal(thumb?.status, 200)
  assert.equal(thumb?.headers['content-type'], 'image/webp')
  assert.equal(thumb?.headers['content-security-policy'], "default-src 'none'; sandbox")
  assert.equal(thumb?.headers['x-content-type-options'], 'nosniff')
  const profile = await (await fetch(`${base}/v1/users/${user.id}/profile`)).json() as { avatar: { variants: { thumb: string } } }
  assert.equal(profile.avatar.variants.thumb, drawn.src)
  assert.deepEqual(problems, [])
})
