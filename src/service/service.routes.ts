import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { ApiError, catalogue, errorCodes, serviceUnavailable, type ErrorCode } from '../http/errors.js'
import { NAME, VERSION } from './version.js'
import { errorResponses } from '../http/schemas.js'


const ErrorEntry = Type.Object({
  code: Type.String(),
  status: Type.Integer(),
  title: Type.String(),
  message: Type.String({ description: 'The default message; a response may say more.' })
})

const Health = Type.Object({ status: Type.String() })

// A database that does not answer within this time is as good as down for a readiness probe
// (balancers check every few seconds and give up after a few more).
const READY_TIME_LIMIT_MS = 2000

class ReadinessTimeout extends Error {
  constructor () { super('the readiness check timed out'); this.name = 'ReadinessTimeout' }
}

async function withTimeLimit<T> (work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new ReadinessTimeout()) }, ms) })
  try {
    return await Promise.race([work, limit])
  } finally {
    clearTimeout(timer)
  }
}

// The service surface outside /v1: index, health, the error catalogue and the OpenAPI document.
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/', {
    schema: {
      tags: ['service'],
      summary: 'Service index',
      response: {
        200: Type.Object({
          name: Type.String(),
          apiBase: Type.String({ description: 'The base path of every resource ({base_url}).' }),
          version: Type.String(),
          links: Type.Object({ openapi: Type.String(), docs: Type.String(), health: Type.String(), errors: Type.String() })
        }),
        ...errorResponses()
      }
    }
  }, async () => ({
    name: NAME,
    version: VERSION,
    apiBase: '/v1',
    links: { openapi: '/openapi.json', docs: '/docs', health: '/health/ready', errors: '/errors' }
  }))

  app.get('/health/live', {
    schema: { tags: ['service'], summary: 'Liveness: 200 while the process runs', response: { 200: Health, ...errorResponses() } }
  }, async () => ({ status: 'ok' }))

  app.get('/health/ready', {
    schema: {
      tags: ['service'],
      summary: 'Readiness: 200 when the database answers',
      response: { 200: Health, ...errorResponses('SERVICE_UNAVAILABLE') }
    }
  }, async () => {
    // A draining instance (shutting down) is not ready, so a balancer takes it out at once.
    if (app.drain.draining) throw serviceUnavailable({ message: 'The server is shutting down.' })
    try {
      await withTimeLimit(sql`select 1`.execute(app.db), READY_TIME_LIMIT_MS)
    } catch (error) {
      throw serviceUnavailable({ cause: error })
    }
    return { status: 'ok' }
  })

  app.get('/errors', {
    schema: { tags: ['service'], summary: 'The error catalogue', response: { 200: Type.Array(ErrorEntry), ...errorResponses() } }
  }, async () => errorCodes.map((code) => ({ code, ...catalogue[code] })))

  app.get('/errors/:code', {
    schema: {
      tags: ['service'],
      summary: 'One error code\'s catalogue entry (the `type` URI of every error body)',
      // Any string: a code that is not in the catalogue, however long, is simply not found.
      params: Type.Object({ code: Type.String() }),
      response: { 200: ErrorEntry, ...errorResponses('NOT_FOUND') }
    }
  }, async (request) => {
    const code = request.params.code
    if (!Object.hasOwn(catalogue, code)) throw new ApiError('NOT_FOUND', { message: 'No such error code.' })
    return { code, ...catalogue[code as ErrorCode] }
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

export const serviceRoutes = fp(routes, { name: 'service', dependencies: ['error-handler', 'routing', 'openapi', 'database', 'drain'], encapsulate: true })
