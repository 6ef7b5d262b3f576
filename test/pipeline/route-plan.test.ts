import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { accessOf, requires } from '../../src/auth/scopes.js'
import { planRoute, routePlans, type RoutePlan } from '../../src/pipeline/route-plan.js'
import { buildTestApp } from '../helper.js'

// A route's plan is worked out once, from what the route declares: its pattern, its `security`,
// its body, its config. Every step of the request path reads the plan instead of the route.

const plan = (route: Parameters<typeof planRoute>[0]): RoutePlan => planRoute(route, accessOf)

describe('a route\'s plan', () => {
  test('from its declared security: public, a log-in token, a scope', () => {
    assert.equal(plan({ method: 'GET', url: '/v1/posts/:id', schema: { security: [] } }).access, undefined)
    assert.equal(plan({ method: 'GET', url: '/v1/sessions/current', schema: { security: requires('session') } }).access, 'session')
    assert.equal(plan({ method: 'POST', url: '/v1/posts', schema: { security: requires('posts:write'), body: Type.Object({}) } }).access, 'posts:write')
  })

  test('from its body, pattern and config', () => {
    const create = plan({ method: 'POST', url: '/v1/posts', schema: { security: requires('posts:write'), body: Type.Object({}) } })
    assert.deepEqual({ ...create }, { route: '/v1/posts', exempt: false, access: 'posts:write', streamTickets: false, takesBody: true, upload: false, noStore: false })
    const read = plan({ method: 'GET', url: '/v1/posts/:id', schema: { security: [] } })
    assert.equal(read.takesBody, false)
    assert.equal(plan({ method: 'POST', url: '/v1/sessions', schema: { security: [], body: Type.Object({}) } }).noStore, true)
    assert.equal(plan({ method: 'GET', url: '/v1/events', schema: { security: requires('events:read') }, config: { streamTickets: true } }).streamTickets, true)
    const upload = plan({ method: 'PUT', url: '/v1/users/:id/avatar', schema: { security: requires('session') }, config: { upload: true } })
    assert.deepEqual([upload.takesBody, upload.upload], [true, true])
    for (const url of ['/health/live', '/health/ready', '/openapi.json', '/docs', '/docs/static/index.html', '/v1/files/:fileId', '/v1/files/:fileId/:variant']) {
      assert.equal(plan({ method: 'GET', url, schema: { security: [] } }).exempt, true, url)
    }
    assert.equal(plan({ method: 'GET', url: '/v1/healthy', schema: { security: [] } }).exempt, false)
    // A route without a schema (a static file of the reference) is public and reads no body.
    assert.deepEqual({ ...plan({ method: 'GET', url: '/docs/*' }) }, { route: '/docs/*', exempt: true, access: undefined, streamTickets: false, takesBody: false, upload: false, noStore: false })
  })

  test('an operation that declares no security fails at start-up; a hidden route need not', async () => {
    assert.throws(() => plan({ method: 'DELETE', url: '/v1/things/:id', schema: { params: Type.Object({ id: Type.String() }) } }), /DELETE \/v1\/things\/:id declares no security/)
    assert.doesNotThrow(() => plan({ method: 'GET', url: '/openapi.json', schema: { hide: true } }))
    const app = Fastify({ logger: false })
    await app.register(routePlans, { accessOf })
    await assert.rejects(async () => {
      app.get('/v1/things', { schema: { response: { 200: Type.Object({}) } } }, async () => ({}))
      await app.ready()
    }, /GET \/v1\/things declares no security/)
    await app.close().catch(() => {})
  })

  test('every route of the service has its plan, as its schema says', async () => {
    const t = await buildTestApp()
    after(t.close)
    const doc = t.app.swagger() as { paths: Record<string, Record<string, { security?: unknown, requestBody?: unknown }>> }
    const plans: RoutePlan[] = []
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const url = path.replace(/\{([^}]+)\}/g, ':$1')
        const routePlan = t.app.routePlans.get(`${method.toUpperCase()} ${url}`)
        assert.ok(routePlan !== undefined, `${method.toUpperCase()} ${path} has no plan`)
        assert.equal(routePlan.route, url)
        assert.equal(routePlan.access, accessOf(operation.security), `${method.toUpperCase()} ${path}`)
        assert.equal(routePlan.takesBody, operation.requestBody !== undefined, `${method.toUpperCase()} ${path}`)
        plans.push(routePlan)
      }
    }
    assert.ok(plans.length > 40)
  })
})
