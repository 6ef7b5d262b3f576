import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp, createUser } from '../helper.js'

// nosniff on every response; no-store on answers to authenticated requests, on every session
// answer and on answers to writes; /docs under a Content-Security-Policy of the service's own
// origin only, and every asset the reference page loads is same-origin.

const { app, close } = await buildTestApp()
after(close)
const user = await createUser(app)

describe('X-Content-Type-Options and Cache-Control', () => {
  test('nosniff on every response: success, error, 404, 405, docs', async () => {
    const answers = await Promise.all([
      app.inject({ method: 'GET', url: '/' }),
      app.inject({ method: 'GET', url: '/v1/users/999999' }),
      app.inject({ method: 'GET', url: '/nowhere' }),
      app.inject({ method: 'PATCH', url: '/v1/users/1' }),
      app.inject({ method: 'GET', url: '/v1/users/%E0%A4%A' }),
      app.inject({ method: 'GET', url: '/docs' }),
      app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json' }, payload: '{x' })
    ])
    for (const res of answers) assert.equal(res.headers['x-content-type-options'], 'nosniff', `${res.statusCode} ${res.body.slice(0, 80)}`)
  })

  test('no-store: the log-in (it carries the token), the current session, any authenticated read, a sign-up', async () => {
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
    assert.equal(login.statusCode, 201)
    assert.equal(login.headers['cache-control'], 'no-store')
    const failed = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: 'wrong password' } })
    assert.equal(failed.headers['cache-control'], 'no-store')
    for (const url of ['/v1/sessions/current', `/v1/users/${user.id}/orders`, `/v1/users/${user.id}`, '/v1/posts']) {
      const res = await app.inject({ method: 'GET', url, headers: user.auth })
      assert.equal(res.headers['cache-control'], 'no-store', url)
    }
    const signUp = await app.inject({ method: 'POST', url: '/v1/users', payload: { email: `nostore.${Date.now()}@example.com`, password: 'long enough', name: 'N' } })
    assert.equal(signUp.statusCode, 201)
    assert.equal(signUp.headers['cache-control'], 'no-store')
  })

  test('public anonymous reads stay cacheable (no no-store)', async () => {
    const res = await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['cache-control'], undefined)
  })
})

describe('/docs Content-Security-Policy', () => {
  test('the reference page allows only its own origin, and loads nothing from elsewhere', async () => {
    const page = await app.inject({ method: 'GET', url: '/docs' })
    assert.equal(page.statusCode, 200)
    const csp = String(page.headers['content-security-policy'])
    assert.match(csp, /(^|; )default-src 'self'(;|$)/)
    assert.match(csp, /(^|; )script-src 'self'(;|$)/)
    assert.match(csp, /(^|; )style-src 'self'(;|$)/)
    assert.match(csp, /(^|; )connect-src 'self'(;|$)/)
    assert.match(csp, /(^|; )object-src 'none'(;|$)/)
    assert.doesNotMatch(csp, /https?:|unsafe-inline|unsafe-eval|\*/, 'no other origin, no inline code')
    // Every asset the page names is a relative (same-origin) address, and it is served.
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    assert.ok(assets.length >= 4, assets.join(' '))
    for (const asset of assets) {
      assert.doesNotMatch(asset, /^(?:[a-z]+:)?\/\//i, `${asset} is same-origin`)
      const url = new URL(asset, 'http://service.test/docs')
      const res = await app.inject({ method: 'GET', url: url.pathname })
      assert.equal(res.statusCode, 200, url.pathname)
    }
    // No inline script the policy would block.
    assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/)
    // The script that starts Swagger UI loads the document from this origin (./json) and sends
    // nothing to the public validator.
    const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
    assert.match(init.body, /resolveUrl\('\.\/json'\)/)
    assert.match(init.body, /validatorUrl: null/)
    assert.equal((await app.inject({ method: 'GET', url: '/docs/json' })).statusCode, 200)
  })

  test('the API itself carries no docs policy', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/posts' })
    assert.equal(res.headers['content-security-policy'], undefined)
  })
})
