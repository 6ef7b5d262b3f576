import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import type { Operation, Schema } from './openapi-operations.js'
import { assertUnderstood } from './schema-arbitrary.js'

// Every response the fuzzer receives is held to the document: its status is one the operation
// lists, its media type is one listed for that status, its body matches that schema, and the
// documented headers it carries match theirs. Error bodies also say the same status and request
// id as the response itself.

export interface Received {
  statusCode: number
  headers: Record<string, unknown>
  body: string
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

function createAjv (): Ajv2020 {
  // Strict about formats (an unknown one is an error); the document's own request keywords are
  // annotations here (responses are checked for shape, requests by the server).
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true })
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) })
  ajv.addFormat('date-time', ISO_DATE_TIME)
  ajv.addFormat('email', () => true)
  for (const keyword of ['x-well-formed', 'x-int64-id', 'x-cursor', 'x-sorted-cursor', 'x-require-one-of', 'example']) ajv.addKeyword(keyword)
  return ajv
}

function mediaType (headers: Record<string, unknown>): string {
  return String(headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
}

export class Conformance {
  private readonly ajv = createAjv()
  private readonly compiled = new Map<string, ValidateFunction>()

  constructor (operations: Operation[]) {
    // Every schema of every response is read by this checker: none may use a keyword it skips.
    for (const op of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        for (const [type, schema] of Object.entries(response.media)) assertUnderstood(schema, `${op.key} ${status} ${type}`)
        for (const [name, schema] of Object.entries(response.headers)) assertUnderstood(schema, `${op.key} ${status} header ${name}`)
      }
    }
  }

  private validator (key: string, schema: Schema): ValidateFunction {
    let validate = this.compiled.get(key)
    if (validate === undefined) {
      validate = this.ajv.compile(schema)
      this.compiled.set(key, validate)
    }
    return validate
  }

  /** What is wrong with this response for this operation, or undefined when it conforms. */
  problem (op: Operation, res: Received): string | undefined {
    const documented = op.responses[String(res.statusCode)]
    if (documented === undefined) return `status ${res.statusCode} is not documented for ${op.key} (documented: ${Object.keys(op.responses).join(', ')})`
    for (const [name, schema] of Object.entries(documented.headers)) {
      const value = res.headers[name]
      if (value === undefined) continue
      const validate = this.validator(`${op.key} ${res.statusCode} header ${name}`, schema)
      if (!validate(value)) return `header ${name}: ${JSON.stringify(value)} ${this.ajv.errorsText(validate.errors)}`
    }
    const types = Object.keys(documented.media)
    if (types.length === 0) {
      return res.body === '' ? undefined : `status ${res.statusCode} documents no content, got ${JSON.stringify(res.body.slice(0, 200))}`
    }
    const type = mediaType(res.headers)
    const schema = documented.media[type]
    if (schema === undefined) return `media type ${JSON.stringify(type)} is not documented for ${res.statusCode} (documented: ${types.join(', ')})`
    let body: unknown = res.body
    if (type.endsWith('json')) {
      try {
        body = JSON.parse(res.body)
      } catch {
        return `the ${type} body is not JSON: ${JSON.stringify(res.body.slice(0, 200))}`
      }
    }
    const validate = this.validator(`${op.key} ${res.statusCode} ${type}`, schema)
    if (!validate(body)) return `body does not match the documented schema: ${this.ajv.errorsText(validate.errors)}`
    if (res.statusCode >= 400 && typeof body === 'object' && body !== null) {
      const error = body as Record<string, unknown>
      if (error.status !== res.statusCode) return `error body status ${String(error.status)} differs from ${res.statusCode}`
      if (error.requestId !== res.headers['x-request-id']) return 'error body requestId differs from X-Request-Id'
    }
    return undefined
  }
}
