import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, describe, test } from 'node:test'
import { buildTestApp } from '../helper.js'

// GET / (the service index) and GET /docs (the interactive reference), docs/api.md

const { app, close } = await buildTestApp()
after(close)
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string, version: string }

describe('service index', () => {
  test('GET / gives the name, the version and the links', async () => {
    const res = await app.inject({ method: 'GET', url: '/' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    const index = res.json()
    assert.equal(index.name, pkg.name)
    assert.equal(index.version, pkg.version)
    assert.equal(index.apiBase, '/v1')
    assert.deepEqual(index.links, { openapi: '/openapi.json', docs: '/docs', health: '/health/ready', errors: '/errors' })
  })

  test('the version matches the OpenAPI document\'s', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
    assert.equal(doc.info.version, pkg.version)
  })

  test('every link answers 200', async () => {
    const { links } = (await app.inject({ method: 'GET', url: '/' })).json()
    for (const [name, link] of Object.entries<string>(links)) {
      const res = await app.inject({ method: 'GET', url: link })
      assert.equal(res.statusCode, 200, `${name}: ${link}`)
    }
  })
})

describe('interactive reference', () => {
  test('GET /docs is an HTML page', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^text\/html/)
    assert.match(res.body, /<html/i)
  })

  test('the page\'s own scripts are served, and it reads the app\'s document', async () => {
    const page = (await app.inject({ method: 'GET', url: '/docs' })).body
    const scripts = [...page.matchAll(/src="([^"]+\.js)"/g)].map((m) => m[1]!)
    assert.ok(scripts.length > 0)
    for (const src of scripts) {
      const res = await app.inject({ method: 'GET', url: new URL(src, 'http://x/docs/').pathname })
      assert.equal(res.statusCode, 200, src)
    }
    const json = await app.inject({ method: 'GET', url: '/docs/json' })
    assert.equal(json.statusCode, 200)
    assert.equal(json.json().openapi, '3.1.0')
  })
})
