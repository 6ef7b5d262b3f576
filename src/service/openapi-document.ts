import type { SwaggerOptions } from '@fastify/swagger'
import { eventSchemaName } from '../events/event.schemas.js'
import { EVENT_TYPES, PING_TYPE } from '../events/event.types.js'
import { UPLOAD_OPERATIONS, UPLOAD_REQUEST_BODY } from '../files/uploads.js'
import { VERSION } from '../version.js'

// The options of the OpenAPI document (@fastify/swagger) and the last touches it gets once
// generated from the route schemas: shared response headers as components, examples of
// request bodies, the root-level security requirement.

/** Response headers named once under components.headers and referenced by every response that sends them. */
const SHARED_HEADERS: Record<string, string> = {
  'x-request-id': 'X-Request-Id',
  ratelimit: 'RateLimit',
  'ratelimit-policy': 'RateLimit-Policy',
  'retry-after': 'Retry-After',
  'www-authenticate': 'WWW-Authenticate',
  etag: 'ETag',
  link: 'Link',
  location: 'Location',
  'idempotent-replayed': 'Idempotent-Replayed'
}

type Json = Record<string, any>

const DESCRIPTION = [
  'Users, sessions, posts, products and orders over JSON.',
  '',
  'The rules of the API (representations, paging, conditional requests, limits, authentication, the order of checks, every error code) are written out in `docs/api.md` in the service\'s repository; this document is generated from the code.',
  '',
  'Every error has the same body, `{type, title, status, code, message, requestId}` (plus `errors[]` for VALIDATION_ERROR): branch on `code`. `GET /errors/{code}` explains each code: when it happens, what to do, and whether a retry may succeed.',
  '',
  'Ids are integers from 1 to 9007199254740991 (2^53 - 1), so a JavaScript client reads them exactly; an id in a path is matched as an exact 64-bit decimal.'
].join('\n')

/** Moves each operation's copies of a shared header into components.headers, under its usual spelling. */
function shareHeaders (doc: Json): void {
  const components: Json = doc.components.headers ?? {}
  for (const path of Object.values<Json>(doc.paths)) {
    for (const operation of Object.values<Json>(path)) {
      for (const response of Object.values<Json>(operation.responses ?? {})) {
        if (response.headers === undefined) continue
        const headers: Json = {}
        for (const [name, header] of Object.entries<Json>(response.headers)) {
          const shared = SHARED_HEADERS[name.toLowerCase()]
          if (shared === undefined) {
            headers[name] = header
            continue
          }
          components[shared] ??= header
          headers[shared] = { $ref: `#/components/headers/${shared}` }
        }
        response.headers = headers
      }
    }
  }
  doc.components.headers = components
}

function pascal (code: string): string {
  return code.toLowerCase().split('_').map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')
}

/**
 * Error responses that several operations share word for word (the 429, 500 and 503 every
 * operation has, a 401, the body errors) become components.responses, named for their codes,
 * so that the document states them once.
 */
function shareErrorResponses (doc: Json): void {
  const seen = new Map<string, { count: number, name: string, response: Json }>()
  const each = (visit: (operation: Json, status: string, response: Json) => void): void => {
    for (const path of Object.values<Json>(doc.paths)) {
      for (const operation of Object.values<Json>(path)) {
        for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
          if (Number(status) >= 400 && response.$ref === undefined) visit(operation, status, response)
        }
      }
    }
  }
  each((_operation, _status, response) => {
    const key = JSON.stringify(response)
    const codes: string[] = response.content?.['application/json']?.schema?.allOf?.[1]?.properties?.code?.enum ?? ['VALIDATION_ERROR']
    const entry = seen.get(key) ?? { count: 0, name: codes.map(pascal).join('Or'), response }
    entry.count += 1
    seen.set(key, entry)
  })
  const responses: Json = doc.components.responses ?? {}
  each((operation, status, response) => {
    const entry = seen.get(JSON.stringify(response))
    if (entry === undefined || entry.count < 2) return
    responses[entry.name] ??= entry.response
    operation.responses[status] = { $ref: `#/components/responses/${entry.name}` }
  })
  doc.components.responses = responses
}

/**
 * The id of a path or query parameter (`/v1/posts/{id}`, `?authorId=`), a decimal text matched
 * as an exact 64-bit integer by a long pattern, is named once, as components.schemas.IdText, and
 * every such parameter references it.
 */
function shareIdSchema (doc: Json): void {
  let shared: Json | undefined
  for (const path of Object.values<Json>(doc.paths)) {
    for (const operation of Object.values<Json>(path)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.schema?.['x-int64-id'] !== true) continue
        shared ??= parameter.schema
        if (JSON.stringify(parameter.schema) !== JSON.stringify(shared)) throw new Error(`the id parameter ${String(parameter.name)} has a schema of its own`)
        parameter.schema = { $ref: '#/components/schemas/IdText' }
      }
    }
  }
  if (shared !== undefined) doc.components.schemas.IdText = { ...shared, description: 'An id as text: a decimal integer from 1 to 9223372036854775807, without sign, leading zeros or spaces.' }
}

/** The operations that take a file get its request body (files/uploads.ts): their route schema has none, since the body is a stream. */
function uploadBodies (doc: Json): void {
  for (const path of Object.values<Json>(doc.paths)) {
    for (const operation of Object.values<Json>(path)) {
      if (UPLOAD_OPERATIONS.has(operation.operationId)) operation.requestBody = UPLOAD_REQUEST_BODY
    }
  }
}

/** Each request body that references a named schema shows that schema's first example. */
function requestExamples (doc: Json): void {
  const schemas: Json = doc.components.schemas ?? {}
  for (const path of Object.values<Json>(doc.paths)) {
    for (const operation of Object.values<Json>(path)) {
      for (const media of Object.values<Json>(operation.requestBody?.content ?? {})) {
        const name = typeof media.schema?.$ref === 'string' ? media.schema.$ref.split('/').pop() : undefined
        const example = name === undefined ? undefined : schemas[name]?.examples?.[0]
        if (example !== undefined && media.example === undefined) media.example = example
      }
    }
  }
}

const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: 'The event\'s id: the same on every attempt and redelivery, so a receiver drops a duplicate.', example: 'evt_3q2-7xWm0aZ5vLk8pQnRtY' },
  { name: 'webhook-timestamp', description: 'When the attempt was signed, in seconds since 1970; refuse one too far from now (the standardwebhooks package allows 5 minutes).', example: '1795624200' },
  { name: 'webhook-signature', description: 'Space-separated `v1,BASE64` signatures (HMAC-SHA256 of `id.timestamp.body`), one per current secret. Verify with the Standard Webhooks libraries.', example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' }
]

/**
 * The `webhooks` section: every event type as the request the service sends to an endpoint,
 * its body the event's named schema.
 */
function webhooks (doc: Json): void {
  const parameters = WEBHOOK_HEADERS.map(({ name, description, example }) => ({ name, in: 'header', required: true, description, schema: { type: 'string' }, example }))
  const entries: Json = {}
  for (const type of [...EVENT_TYPES, PING_TYPE]) {
    const schema = doc.components.schemas[eventSchemaName(type)]
    entries[type] = {
      post: {
        operationId: `${eventSchemaName(type).charAt(0).toLowerCase()}${eventSchemaName(type).slice(1)}Webhook`,
        tags: ['webhooks'],
        summary: type,
        description: `${String(schema?.description ?? '')} Sent to every enabled endpoint whose owner may read it and whose \`events\` include it; answer 2xx within 15 seconds, or it is retried. 410 disables the endpoint.`,
        security: [],
        parameters,
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${eventSchemaName(type)}` } } } },
        responses: { '2XX': { description: 'Received. Any other answer, or none within the time limit, is retried on the schedule.' } }
      }
    }
  }
  doc.webhooks = entries
}

export const swaggerOptions: SwaggerOptions = {
  // Named schemas keep their names: components.schemas.Post, referenced as #/components/schemas/Post.
  refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` },
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Resource API',
      version: VERSION,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'Resource API maintainers' }
    },
    // Public: the API is meant for any client (the metrics live on a private listener).
    servers: [{ url: '/', 'x-internal': false } as { url: string }],
    // Every operation needs a bearer token unless it says `security: []` (the public ones).
    security: [{ bearerAuth: [] }],
    // An API key is a bearer credential too; each operation it may call lists the scope it needs
    // under `apiKey` (OpenAPI 3.1 allows role names for any scheme). One without `apiKey` needs a log-in token.
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A token from POST /v1/sessions (log-in): everything its user may do.' },
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'rk_…', description: 'An API key from POST /v1/api-keys, sent as `Authorization: Bearer rk_…`: only the operations whose `security` lists one of its scopes (posts:write, orders:read, orders:write, products:write, events:read, webhooks:read, webhooks:write); 403 INSUFFICIENT_SCOPE otherwise.' }
      }
    }
  },
  transformObject: (documentObject) => {
    const doc = (documentObject as { openapiObject: Json }).openapiObject
    shareHeaders(doc)
    shareErrorResponses(doc)
    shareIdSchema(doc)
    requestExamples(doc)
    uploadBodies(doc)
    webhooks(doc)
    return doc
  }
}
