import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { CONSOLE_CSP, CONSOLE_DIR, withProviders } from '../../src/console/console.plugin.js'
import { assertError, buildTestApp } from '../helper.js'

// /console/: the page `npm run build` made (npm test builds it first), with its policy, and its
// assets under their hashed names; nothing else is served from there.

const { app, close } = await buildTestApp()
after(close)

describe('the console\'s files', () => {
  test('the build is there: a page and its script and stylesheet', () => {
    assert.ok(existsSync(join(CONSOLE_DIR, 'index.html')), `${CONSOLE_DIR}index.html (npm run build)`)
    const assets = readdirSync(join(CONSOLE_DIR, 'assets'))
    assert.ok(assets.some((name) => /^index-[\w-]+\.js$/.test(name)) && assets.some((name) => /^index-[\w-]+\.css$/.test(name)), assets.join(', '))
  })

  test('/console/ is the page with its policy, never cached stale, never framed; /console redirects to it', async () => {
    const page = await app.inject({ method: 'GET', url: '/console/' })
    assert.equal(page.statusCode, 200)
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(page.headers['content-security-policy'], CONSOLE_CSP)
    assert.equal(page.headers['referrer-policy'], 'no-referrer')
    assert.equal(page.headers['x-frame-options'], 'DENY')
    assert.equal(page.headers['cache-control'], 'no-cache')
    assert.equal(page.headers['x-content-type-options'], 'nosniff')
    assert.doesNotMatch(page.body, /<script>|<style|style=/, 'no inline script or style')
    const redirect = await app.inject({ method: 'GET', url: '/console' })
    assert.equal(redirect.statusCode, 301)
    assert.equal(redirect.headers.location, '/console/')
  })

  test('every asset the page names is served with its type, cached for good; any other name is 404', async () => {
    const page = (await app.inject({ method: 'GET', url: '/console/' })).body
    const named = [...page.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!)
    assert.equal(named.length, 2, page)
    for (const url of named) {
      const asset = await app.inject({ method: 'GET', url })
      assert.equal(asset.statusCode, 200, url)
      assert.match(String(asset.headers['content-type']), url.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
      assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
    }
    for (const url of ['/console/assets/nope.js', '/console/assets/..%2F..%2Fpackage.json', '/console/index.html', '/console/src/main.tsx']) {
      assertError(await app.inject({ method: 'GET', url }), 404, 'NOT_FOUND')
    }
  })

  test('the page names the identity providers that may send people back to /console/, and only those', () => {
    const page = Buffer.from('<head>\n    <meta name="referrer" content="no-referrer">\n</head>')
    const provider = (id: string, ...redirectUris: string[]): { id: string, redirectUris: string[] } => ({ id, redirectUris })
    assert.equal(withProviders(page, []), page)
    assert.equal(withProviders(page, [provider('gitlab', 'https://app.example.com/signed-in')]), page)
    const named = withProviders(page, [
      provider('gitlab', 'https://app.example.com/signed-in', 'https://api.example.com/console/'),
      provider('google', 'https://api.example.com/console/?x=1'),
      provider('github', 'https://api.example.com/console/elsewhere')
    ]).toString()
    assert.match(named, /<meta name="identity-providers" content="gitlab google">\n {4}<meta name="referrer"/)
  })
})
