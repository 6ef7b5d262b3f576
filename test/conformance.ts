import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifyInstance, FastifyReply, FastifyRequest, InjectOptions } from 'fastify'

// Every response the suite produces is checked against the OpenAPI document the app serves:
// its status must be documented for the operation, every API header it carries must be
// documented on that status, and its body must match the documented schema of its media type.
// A violation fails the test whose request produced it (app.inject throws it), and whatever
// is left over (requests over real HTTP) fails the file when the app closes.

// Generic transport and security headers that any HTTP response may carry; everything else is
// an API header and must be documented.
const TRANSPORT = /^(content-type|content-length|date|connection|keep-alive|transfer-encoding|vary|access-control-.*|x-content-type-options|cache-control|content-security-policy|strict-transport-security|x-frame-options|referrer-policy|cross-origin-.*|origin-agent-cluster|x-dns-prefetch-control|x-download-options|x-permitted-cross-domain-policies|x-xss-protection)$/

type Json = Record<string, any>

interface Seen {
  method: string
  url: string
  route: string | undefined
  status: number
  headers: Record<string, unknown>
  payload: unknown
}

export interface Conformance {
  /** Throws the violations recorded since the last call (and forgets them). */
  check: () => void
}

export function checkConformance (app: FastifyInstance): Conformance {
  const violations: string[] = []
  let doc: Json | undefined
  let ajv: Ajv | undefined
  const compiled = new Map<object, ValidateFunction>()

  const validatorFor = (schema: object): ValidateFunction => {
    let validate = compiled.get(schema)
    if (validate === undefined) {
      // The document's references (#/components/schemas/Post) resolve inside the compiled schema.
      validate = ajv!.compile({ ...schema, components: { schemas: doc!.components.schemas } })
      compiled.set(schema, validate)
    }
    return validate
  }

  const resolve = (node: Json): Json => {
    if (typeof node?.$ref !== 'string') return node
    const [, kind, name] = /^#\/components\/(\w+)\/(.+)$/.exec(node.$ref) ?? []
    return doc!.components[kind!][name!]
  }

  const examine = (seen: Seen): string | undefined => {
    if (doc === undefined) {
      doc = app.swagger() as Json
      ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false })
    }
    const what = `${seen.method} ${seen.url} -> ${seen.status}`
    if (seen.route === undefined) {
      // No operation (unknown route or method): the error body is all there is to check.
      const schema = { $ref: '#/components/schemas/Problem' }
      return checkBody(what, { content: { 'application/json': { schema }, 'application/problem+json': { schema } } }, seen)
    }
    const path = seen.route.replace(/:(\w+)/g, '{$1}')
    const method = seen.method === 'HEAD' ? 'get' : seen.method.toLowerCase()
    const operation = doc.paths[path]?.[method]
    // Hidden routes (the document itself, /docs) are not operations; OPTIONS is CORS's.
    if (operation === undefined) return undefined
    const listed = operation.responses[String(seen.status)] ?? operation.responses[`${String(seen.status)[0]}XX`] ?? operation.responses.default
    if (listed === undefined) return `${what}: status ${seen.status} is not documented for ${method.toUpperCase()} ${path}`
    const response = resolve(listed)
    const documented = new Set(Object.keys(response.headers ?? {}).map((h) => h.toLowerCase()))
    for (const name of Object.keys(seen.headers)) {
      if (!TRANSPORT.test(name) && !documented.has(name.toLowerCase())) return `${what}: header ${name} is not documented on ${seen.status} of ${method.toUpperCase()} ${path}`
    }
    // No body goes out on HEAD, 204 or 304, whatever the handler passed (Fastify drops it).
    if (seen.method === 'HEAD') return undefined
    if (seen.status === 204 || seen.status === 304) return response.content === undefined ? undefined : `${what}: the document promises a body`
    return checkBody(what, response, seen)
  }

  const checkBody = (what: string, response: Json, seen: Seen): string | undefined => {
    const text = typeof seen.payload === 'string' ? seen.payload : Buffer.isBuffer(seen.payload) ? seen.payload.toString('utf8') : undefined
    if (response.content === undefined) {
      return text === undefined || text === '' ? undefined : `${what}: a body where the document says there is none`
    }
    if (text === undefined) return undefined // a stream (static files): not an API body
    const mediaType = String(seen.headers['content-type'] ?? '').split(';')[0]!.trim()
    const media = response.content[mediaType]
    if (media === undefined) return `${what}: media type ${mediaType} is not documented (${Object.keys(response.content).join(', ')})`
    if (!mediaType.endsWith('json')) return undefined
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return `${what}: the body is not JSON`
    }
    const validate = validatorFor(media.schema)
    if (validate(body)) return undefined
    return `${what}: the body does not match the document: ${ajv!.errorsText(validate.errors)} in ${text.slice(0, 300)}`
  }

  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    // Added after every other hook of the app, so the response is complete here but for the
    // transport headers Node adds while writing it.
    const seen: Seen = {
      method: request.method,
      url: request.url,
      route: request.routeOptions.url,
      status: reply.statusCode,
      headers: reply.getHeaders(),
      payload
    }
    try {
      const violation = examine(seen)
      if (violation !== undefined) violations.push(violation)
    } catch (error) {
      violations.push(`${seen.method} ${seen.url}: the conformance check failed: ${String(error)}`)
    }
    return payload
  })

  const inject = app.inject.bind(app) as (options?: InjectOptions | string) => any
  // The test that made the request fails with the violation, at the line that made it.
  ;(app as { inject: unknown }).inject = (options?: InjectOptions | string, callback?: unknown) => {
    if (options === undefined || callback !== undefined) return (inject as any)(options, callback)
    return inject(options).then((res: unknown) => {
      check()
      return res
    })
  }

  const check = (): void => {
    if (violations.length === 0) return
    const found = violations.splice(0)
    throw new Error(`Responses that do not conform to the OpenAPI document:\n${found.join('\n')}`)
  }
  return { check }
}
