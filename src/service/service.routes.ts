import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { ApiError, catalogue, errorCodes, serviceUnavailable, type ErrorCode } from '../http/errors.js'
import { NAME, VERSION } from '../version.js'
import { errorResponses, named, ref, success, unlimitedErrorResponses } from '../http/schemas.js'

export const ErrorEntry = named('ErrorEntry', Type.Object({
  code: Type.String(),
  status: Type.Integer(),
  title: Type.String(),
  message: Type.String({ description: 'The default message; a response may say more.' }),
  description: Type.String({ description: 'When the code happens and what a client should do about it.' }),
  retryable: Type.Boolean({ description: 'Whether the same request, unchanged, may succeed later (after `Retry-After`, when given).' })
}, {
  description: 'One error code of the catalogue, explained.',
  examples: [{
    code: 'POST_NOT_FOUND',
    status: 404,
    title: 'Post not found',
    message: 'The post does not exist.',
    description: 'No post has this id (never created, or deleted). Check the id.',
    retryable: false
  }]
}))

export const Health = named('Health', Type.Object({ status: Type.String() }, { description: 'The process (or the database) answers.', examples: [{ status: 'ok' }] }))

export const ServiceIndex = named('ServiceIndex', Type.Object({
  name: Type.String(),
  apiBase: Type.String({ description: 'The base path of every resource ({base_url}).' }),
  version: Type.String(),
  links: Type.Object({ openapi: Type.String(), docs: Type.String(), health: Type.String(), errors: Type.String() })
}, {
  description: 'What this service is and where its documents are.',
  examples: [{ name: 'resource-api', apiBase: '/v1', version: '0.1.0', links: { openapi: '/openapi.json', docs: '/docs', health: '/health/ready', errors: '/errors' } }]
}))

const tags = ['service']
// None of these needs a log-in.
const security: [] = []

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
      tags,
      operationId: 'getServiceIndex',
      summary: 'Service index',
      security,
      response: { 200: success(ServiceIndex, { description: 'The index.' }), ...errorResponses() }
    }
  }, async () => ({
    name: NAME,
    version: VERSION,
    apiBase: '/v1',
    links: { openapi: '/openapi.json', docs: '/docs', health: '/health/ready', errors: '/errors' }
  }))

  app.get('/health/live', {
    schema: {
      tags,
      operationId: 'getLiveness',
      summary: 'Liveness: 200 while the process runs',
      description: 'Not rate-limited.',
      security,
      response: { 200: success(Health, { description: 'The process runs.' }), ...unlimitedErrorResponses() }
    }
  }, async () => ({ status: 'ok' }))

  app.get('/health/ready', {
    schema: {
      tags,
      operationId: 'getReadiness',
      summary: 'Readiness: 200 when the database answers',
      description: 'Not rate-limited.',
      security,
      response: { 200: success(Health, { description: 'The database answers.' }), ...unlimitedErrorResponses('SERVICE_UNAVAILABLE') }
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
    schema: {
      tags,
      operationId: 'listErrors',
      summary: 'The error catalogue',
      description: 'Every error code the API can answer, with its status, when it happens and what to do about it.',
      security,
      response: { 200: success(Type.Array(ref(ErrorEntry), { maxItems: errorCodes.length }), { description: 'Every entry.', example: ErrorEntry.examples }), ...errorResponses() }
    }
  }, async () => errorCodes.map((code) => ({ code, ...catalogue[code] })))

  app.get('/errors/:code', {
    schema: {
      tags,
      operationId: 'getError',
      summary: 'One error code\'s catalogue entry (the `type` URI of every error body)',
      security,
      // Any string: a code that is not in the catalogue, however long, is simply not found.
      params: Type.Object({ code: Type.String() }),
      response: { 200: success(ErrorEntry, { description: 'The entry.' }), ...errorResponses('NOT_FOUND') }
    }
  }, async (request) => {
    const code = request.params.code
    if (!Object.hasOwn(catalogue, code)) throw new ApiError('NOT_FOUND', { message: 'No such error code.' })
    return { code, ...catalogue[code as ErrorCode] }
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

export const serviceRoutes = fp(routes, { name: 'service', dependencies: ['error-handler', 'unknown-routes', 'openapi', 'database', 'drain'], encapsulate: true })
