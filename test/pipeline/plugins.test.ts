import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Fastify from 'fastify'
import { cors } from '../../src/pipeline/cors.js'
import { errorHandler } from '../../src/pipeline/error-handler.js'
import { jsonBody } from '../../src/pipeline/json-body.plugin.js'
import { rateLimit } from '../../src/pipeline/rate-limit.js'
import { unknownRoutes } from '../../src/pipeline/unknown-routes.js'
import { validation } from '../../src/pipeline/validation.js'

// The cross-cutting plugins declare the plugins they must follow, so an app assembled in the
// wrong order refuses to start instead of running its hooks in the wrong order.

async function startWith (register: (app: ReturnType<typeof Fastify>) => Promise<void>): Promise<void> {
  const app = Fastify({ logger: false })
  try {
    await register(app)
    await app.ready()
  } finally {
    await app.close()
  }
}

describe('plugin order is declared', () => {
  test('in order: the app starts', async () => {
    await startWith(async (app) => {
      await app.register(errorHandler)
      await app.register(unknownRoutes)
      await app.register(cors, { origins: [] })
      await app.register(jsonBody)
      await app.register(validation)
      await app.register(rateLimit, { perMinute: 10 })
    })
  })

  test('the body parser before the unknown-routes answer: refused, naming the missing plugin', async () => {
    await assert.rejects(startWith(async (app) => {
      await app.register(errorHandler)
      await app.register(jsonBody)
    }), (error: Error & { code?: string }) => error.code === 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED' && error.message.includes('unknown-routes'))
  })

  test('the rate limit before CORS: refused', async () => {
    await assert.rejects(startWith(async (app) => {
      await app.register(errorHandler)
      await app.register(unknownRoutes)
      await app.register(rateLimit, { perMinute: 10 })
    }), (error: Error & { code?: string }) => error.code === 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED' && error.message.includes('cors'))
  })
})
