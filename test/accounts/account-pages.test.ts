import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import vm from 'node:vm'
import Fastify, { type FastifyInstance } from 'fastify'
import { accountPages } from '../../src/accounts/account-pages.js'
import { ACCOUNT_JS } from '../../src/accounts/account-pages.assets.js'
import { routePlans } from '../../src/pipeline/route-plan.js'

// The pages opened from a mail: strict headers, no inline script or style, the same page for
// any query (the server never reads it), and a script that spends the token only when the
// button is pressed and removes it from the address.

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY'
}

const PAGES = [
  { path: '/account/email-verification', title: 'Verify your e-mail address', ids: ['submit', 'result'] },
  { path: '/account/password-reset', title: 'Choose a new password', ids: ['submit', 'result', 'new-password'] }
]

const QUERIES = ['?token=abc', '', '?token=%ZZ&token=a&x[]=1', '?', '?token', '?%00=%00&a=b=c&&', `?token=${'x'.repeat(2000)}`]

let app: FastifyInstance

before(async () => {
  app = Fastify({ logger: false })
  await app.register(routePlans, { accessOf: () => undefined })
  await app.register(accountPages)
  await app.ready()
})

after(async () => { await app.close() })

describe('the pages', () => {
  for (const { path, title, ids } of PAGES) {
    for (const query of QUERIES) {
      test(`GET ${path}${query.slice(0, 40)} answers the page with strict headers`, { timeout: 30_000 }, async () => {
        const response = await app.inject({ method: 'GET', url: path + query })
        assert.equal(response.statusCode, 200)
        for (const [name, value] of Object.entries(PAGE_HEADERS)) assert.equal(response.headers[name], value, name)
        const body = response.body
        assert.ok(body.startsWith('<!doctype html>'))
        assert.doesNotMatch(body, /<script(?![^>]*\ssrc=)[^>]*>/i, 'no inline script')
        assert.doesNotMatch(body, /\sstyle\s*=/i, 'no style attribute')
        assert.doesNotMatch(body, /<style/i, 'no style element')
        assert.doesNotMatch(body, /<[^>]*\son[a-z]+\s*=/i, 'no event-handler attribute')
        assert.doesNotMatch(body, /(?:src|href)="(?:https?:)?\/\//i, 'nothing from another origin')
        assert.match(body, /<script src="\/account\/account\.js"/)
        assert.match(body, /<link rel="stylesheet" href="\/account\/account\.css">/)
        assert.match(body, /<html lang="en">/)
        assert.match(body, /<meta name="viewport" content="width=device-width, initial-scale=1">/)
        assert.ok(body.includes(`<title>${title}</title>`))
        for (const id of ids) assert.match(body, new RegExp(`\\sid="${id}"`), id)
        assert.match(body, /id="result" role="status" aria-live="polite"/)
        // The same page whatever the query: nothing of it is echoed.
        assert.ok(!body.includes('abc') && !body.includes('%ZZ') && !body.includes('xxxx'))
      })
    }
  }

  test('the password page labels its field for a new password', { timeout: 30_000 }, async () => {
    const body = (await app.inject({ method: 'GET', url: '/account/password-reset?token=abc' })).body
    assert.match(body, /<label for="new-password">New password<\/label>/)
    const input = /<input [^>]*>/.exec(body)?.[0] ?? ''
    for (const attribute of ['id="new-password"', 'type="password"', 'autocomplete="new-password"', 'minlength="8"', 'maxlength="50"']) assert.ok(input.includes(attribute), attribute)
    assert.ok(!input.includes(' name='), 'no name: a form sent without the script carries no password')
    assert.match(body, /<button id="submit" type="submit"[^>]*>Set the new password<\/button>/)
  })

  test('HEAD answers the headers too', { timeout: 30_000 }, async () => {
    const response = await app.inject({ method: 'HEAD', url: '/account/email-verification?token=abc' })
    assert.equal(response.statusCode, 200)
    assert.equal(response.headers['content-security-policy'], PAGE_HEADERS['content-security-policy'])
  })
})

describe('the assets', () => {
  for (const [path, type] of [['/account/account.js', 'text/javascript; charset=utf-8'], ['/account/account.css', 'text/css; charset=utf-8']] as const) {
    test(`GET ${path}`, { timeout: 30_000 }, async () => {
      const response = await app.inject({ method: 'GET', url: `${path}?v=1&x[]=%ZZ` })
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['content-type'], type)
      assert.equal(response.headers['referrer-policy'], 'no-referrer')
      assert.equal(response.headers['cache-control'], 'public, max-age=300')
      assert.ok(response.body.length > 100)
    })
  }

  test('the script parses, reads the token and calls both endpoints', { timeout: 30_000 }, async () => {
    const script = (await app.inject({ method: 'GET', url: '/account/account.js' })).body
    assert.doesNotThrow(() => new vm.Script(script))
    assert.ok(script.startsWith("'use strict';"))
    assert.ok(script.includes('history.replaceState'))
    assert.ok(script.includes("'/v1/email-verifications'") && script.includes("'/v1/password-resets'"))
    assert.ok(script.includes('fetch(endpoint'))
    assert.ok(!script.includes('innerHTML'), 'text only')
  })
})

// A minimal DOM, enough to run the script and watch what it does.
class FakeElement {
  dataset: Record<string, string> = {}
  disabled = false
  hidden = false
  className = ''
  textContent = ''
  value = ''
  children: FakeElement[] = []
  attributes = new Map<string, string>()
  listeners = new Map<string, (event: unknown) => unknown>()
  replaceChildren (): void { this.children = [] }
  append (child: FakeElement): void { this.children.push(child) }
  setAttribute (name: string, value: string): void { this.attributes.set(name, value) }
  removeAttribute (name: string): void { this.attributes.delete(name) }
  getAttribute (name: string): string | null { return this.attributes.get(name) ?? null }
  focus (): void {}
  addEventListener (type: string, listener: (event: unknown) => unknown): void { this.listeners.set(type, listener) }
  get text (): string { return this.children.map((c) => c.textContent).join('\n') }
}

interface Run {
  elements: Record<string, FakeElement>
  requests: Array<{ url: string, init: { method: string, headers: Record<string, string>, body: string } }>
  replaced: string[]
  submit: () => Promise<void>
}

function runScript (page: 'email-verification' | 'password-reset', search: string, answer: () => Promise<Response> = async () => new Response(null, { status: 204 })): Run {
  const elements: Record<string, FakeElement> = { form: new FakeElement(), submit: new FakeElement(), result: new FakeElement() }
  if (page === 'password-reset') { elements['new-password'] = new FakeElement(); elements['new-password-error'] = new FakeElement() }
  elements.submit!.disabled = true
  const body = new FakeElement()
  body.dataset.page = page
  const run: Run = {
    elements,
    requests: [],
    replaced: [],
    submit: async () => { await elements.form!.listeners.get('submit')!({ preventDefault: () => {} }) }
  }
  const context = {
    document: { body, getElementById: (id: string) => elements[id] ?? null, createElement: () => new FakeElement() },
    location: { search, pathname: `/account/${page}`, hash: '' },
    history: { state: null, replaceState: (_state: unknown, _title: string, url: string) => { run.replaced.push(url) } },
    URLSearchParams,
    fetch: async (url: string, init: Run['requests'][number]['init']) => { run.requests.push({ url, init }); return await answer() }
  }
  vm.runInNewContext(ACCOUNT_JS, context)
  return run
}

const problem = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

describe('the script', () => {
  test('opening the page sends nothing and removes the token from the address', { timeout: 30_000 }, () => {
    const run = runScript('email-verification', '?token=abc&utm=x')
    assert.equal(run.requests.length, 0)
    assert.deepEqual(run.replaced, ['/account/email-verification?utm=x'])
    assert.equal(run.elements.submit!.disabled, false)
    assert.equal(run.elements.result!.text, '')
  })

  test('without a token it says the link is incomplete and keeps the button disabled', { timeout: 30_000 }, async () => {
    for (const search of ['', '?token=', '?x=1']) {
      const run = runScript('password-reset', search)
      assert.equal(run.elements.submit!.disabled, true)
      assert.equal(run.elements.result!.text, 'This link is incomplete: open the whole link from the mail.')
      assert.equal(run.elements.result!.className, 'error')
      await run.submit()
      assert.equal(run.requests.length, 0)
    }
  })

  test('verifying: the button sends the token; 204 shows success and hides the form', { timeout: 30_000 }, async () => {
    const run = runScript('email-verification', '?token=abc')
    await run.submit()
    assert.equal(run.requests.length, 1)
    const [request] = run.requests
    assert.equal(request!.url, '/v1/email-verifications')
    assert.equal(request!.init.method, 'POST')
    assert.equal(request!.init.headers['content-type'], 'application/json')
    assert.deepEqual(JSON.parse(request!.init.body), { token: 'abc' })
    assert.equal(run.elements.result!.text, 'Your e-mail address is verified.')
    assert.equal(run.elements.form!.hidden, true)
  })

  test('an invalid token shows the message and the hint', { timeout: 30_000 }, async () => {
    const run = runScript('email-verification', '?token=abc', async () => problem(400, { code: 'INVALID_TOKEN', message: 'This link is invalid or has expired.' }))
    await run.submit()
    assert.equal(run.elements.result!.text, 'This link is invalid or has expired.\nAsk for a new mail and use the link in the newest one.')
    assert.equal(run.elements.result!.className, 'error')
    assert.equal(run.elements.submit!.disabled, true)
  })

  test('a network failure says so and lets the person try again', { timeout: 30_000 }, async () => {
    const run = runScript('email-verification', '?token=abc', async () => { throw new TypeError('Failed to fetch') })
    await run.submit()
    assert.match(run.elements.result!.text, /could not be reached/)
    assert.equal(run.elements.submit!.disabled, false)
  })

  test('resetting: sends the token and the new password; 204 shows success', { timeout: 30_000 }, async () => {
    const run = runScript('password-reset', '?token=t0k')
    run.elements['new-password']!.value = 'a new password'
    await run.submit()
    assert.equal(run.requests[0]!.url, '/v1/password-resets')
    assert.deepEqual(JSON.parse(run.requests[0]!.init.body), { token: 't0k', newPassword: 'a new password' })
    assert.equal(run.elements.result!.text, 'Your password is changed. Log in with the new one.')
    assert.equal(run.elements.form!.hidden, true)
    assert.equal(run.elements['new-password']!.value, '')
  })

  test('a refused password is shown beside the field; other faults under the message', { timeout: 30_000 }, async () => {
    const run = runScript('password-reset', '?token=t0k', async () => problem(400, {
      code: 'VALIDATION_ERROR',
      message: 'The request has invalid fields.',
      errors: [{ field: 'newPassword', message: 'must be at least 8 characters' }, { field: 'constructor', message: 'is not a recognised field' }]
    }))
    await run.submit()
    const fieldError = run.elements['new-password-error']!
    assert.equal(fieldError.textContent, 'The new password must be at least 8 characters.')
    assert.equal(fieldError.hidden, false)
    assert.equal(run.elements['new-password']!.getAttribute('aria-invalid'), 'true')
    assert.equal(run.elements.result!.text, 'The request has invalid fields.\nconstructor is not a recognised field.')
    assert.equal(run.elements.submit!.disabled, false)
  })

  test('too many requests shows the message and the Retry-After seconds', { timeout: 30_000 }, async () => {
    const run = runScript('password-reset', '?token=t0k', async () => problem(429, { code: 'TOO_MANY_REQUESTS', message: 'Too many requests.' }, { 'retry-after': '42' }))
    await run.submit()
    assert.equal(run.elements.result!.text, 'Too many requests.\nTry again in 42 seconds.')
  })

  test('an answer that is not an error body still says something', { timeout: 30_000 }, async () => {
    const run = runScript('password-reset', '?token=t0k', async () => new Response('<html>bad gateway</html>', { status: 502 }))
    await run.submit()
    assert.equal(run.elements.result!.text, 'Something went wrong (HTTP 502). Try again later.')
  })
})
