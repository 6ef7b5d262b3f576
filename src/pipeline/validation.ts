import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { parseCursor } from '../http/paging.js'
import { parseSortedCursor } from '../http/sorted-paging.js'
import { WHATWG_EMAIL } from '../http/email.js'
import { parseTimestamp } from '../http/timestamps.js'
import { HAS_WORD, ID_PATTERN, MAX_ID, NON_BLANK, WELL_FORMED } from '../http/schemas.js'
import { ApiError, type FieldError } from '../http/errors.js'
import { MisreadNumber } from './json-body.js'
import { routeOf } from './route-context.js'

// Request validation, done here rather than by Fastify's per-part validator so that the
// failures of path, query, body and headers are reported together in one response: every
// failed field at once, in that order. A route's `headers` schema is enforced like the others
// (headers it does not name are not checked).
//
// Bodies are validated with no coercion and no removal of unknown members: "5" is not an
// integer, and an unknown member is an error, never silently dropped. Path and query values
// arrive as strings: a query value is turned into the number or boolean its schema asks for only
// when it is written exactly so (`limit=20`, not `0x14`, ` 20`, `2e1` or `20.0`), see queryValues.

// One Ajv for every part: no coercion (query numbers are converted by queryValues below), no
// removal of unknown members, every error reported.
function createAjv (): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false, strict: false, unicodeRegExp: true })
  ajv.addFormat('email', WHATWG_EMAIL)
  // An id in a JSON body is a JSON number, which JSON.parse reads as a double: above 2^53 it would
  // be silently rounded to another id (and 1e400 reads as Infinity), so such a number is refused.
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) })
  ajv.addFormat('date-time', (text: string) => parseTimestamp(text) !== undefined)
  // An absolute URL as WHATWG URL parsing reads it (what the service itself will request).
  ajv.addFormat('uri', (value: string) => URL.canParse(value))
  ajv.addKeyword({
    keyword: 'x-well-formed',
    type: 'string',
    errors: false,
    validate: (_: unknown, data: string) => data.isWellFormed() && !data.includes('\u0000')
  })
  ajv.addKeyword({
    keyword: 'x-int64-id',
    type: 'string',
    errors: false,
    validate: (_: unknown, data: string) => /^[1-9][0-9]{0,18}$/.test(data) && BigInt(data) <= MAX_ID
  })
  ajv.addKeyword({
    keyword: 'x-cursor',
    type: 'string',
    errors: false,
    validate: (_: unknown, data: string) => parseCursor(data) !== undefined
  })
  ajv.addKeyword({
    keyword: 'x-sorted-cursor',
    type: 'string',
    errors: false,
    validate: (_: unknown, data: string) => parseSortedCursor(data) !== undefined
  })
  return ajv
}

const ajv = createAjv()


const TYPE_NAMES: Record<string, string> = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'a boolean', object: 'a JSON object', array: 'an array', null: 'null'
}

// When one field breaks several rules, the most basic one is reported.
const PRIORITY = ['type', 'required', 'additionalProperties', 'anyOf', 'x-well-formed', 'x-int64-id', 'x-cursor', 'x-sorted-cursor', 'pattern', 'minLength', 'maxLength', 'format', 'minimum', 'maximum', 'enum', 'const']

function messageFor (error: ErrorObject): string {
  const p = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'anyOf': return p.members === undefined ? 'is invalid' : `must contain at least one of: ${(p.members as string[]).join(', ')}`
    case 'x-cursor':
    case 'x-sorted-cursor': return 'is not a valid cursor'
    case 'required': return 'is required'
    case 'additionalProperties': return 'is not a recognised field'
    case 'type': return `must be ${TYPE_NAMES[String(p.type)] ?? String(p.type)}`
    case 'x-well-formed': return 'must not contain NUL characters or unpaired surrogates'
    case 'x-int64-id': return 'must be an integer id from 1 to 9223372036854775807'
    // A value that is not well formed fails `x-well-formed` too, which is reported first.
    case 'pattern': return p.pattern === NON_BLANK
      ? 'must not be blank'
      : p.pattern === WELL_FORMED ? 'must not contain NUL characters or unpaired surrogates'
      : p.pattern === HAS_WORD ? 'must contain at least one word (a letter or digit)' : p.pattern === ID_PATTERN ? 'must be an integer id from 1 to 9223372036854775807' : `must match the pattern ${String(p.pattern)}`
    case 'uniqueItems': return 'must not list an item twice'
    case 'minLength': return `must be at least ${String(p.limit)} characters`
    case 'maxLength': return `must be at most ${String(p.limit)} characters`
    case 'format': return p.format === 'email'
      ? 'must be a valid e-mail address'
      : p.format === 'int64'
        ? `must be an integer id from 1 to ${Number.MAX_SAFE_INTEGER}`
        : p.format === 'date-time' ? 'must be an RFC 3339 timestamp, such as 2026-11-25T10:00:00Z' : `must be a valid ${String(p.format)}`
    case 'minimum': return `must be at least ${String(p.limit)}`
    case 'maximum': return `must be at most ${String(p.limit)}`
    case 'enum': return `must be one of: ${(p.allowedValues as unknown[]).map(String).join(', ')}`
    default: return 'is invalid'
  }
}

function fieldOf (error: ErrorObject, rootName: string): string {
  // A query parameter is one field however many values it has: `category/1` is `category`.
  if (rootName === 'query') return fieldPath(error)[0] ?? rootName
  const segments = fieldPath(error)
  return segments.length === 0 ? rootName : segments.join('.')
}

/** The segments of the failed member's path: the instance path, and the member a rule names. */
function fieldPath (error: ErrorObject): string[] {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  const p = error.params as Record<string, unknown>
  if (error.keyword === 'required') segments.push(String(p.missingProperty))
  if (error.keyword === 'additionalProperties') segments.push(String(p.additionalProperty))
  return segments
}

/** The value an Ajv instance path points at. */
function valueAt (root: unknown, instancePath: string): unknown {
  let node = root
  for (const segment of instancePath.split('/').slice(1)) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')]
  }
  return node
}

/**
 * "At least one of these members" is the standard `anyOf: [{required: [a]}, {required: [b]}]`
 * (a PATCH with nothing to change). Its branches' `required` failures are not failures of
 * those members: they are folded into the one `anyOf` failure of the object itself (field
 * `body` for the body), which then names the members.
 */
function atLeastOneOf (errors: ErrorObject[]): ErrorObject[] {
  const members = new Map<string, string[]>()
  const rest: ErrorObject[] = []
  for (const error of errors) {
    if (error.keyword === 'required' && /\/anyOf\/\d+\/required$/.test(error.schemaPath)) {
      const list = members.get(error.instancePath) ?? []
      list.push(String((error.params as Record<string, unknown>).missingProperty))
      members.set(error.instancePath, list)
    } else {
      rest.push(error)
    }
  }
  return rest.map((error) => error.keyword === 'anyOf' && members.has(error.instancePath)
    ? { ...error, params: { members: members.get(error.instancePath) } }
    : error)
}

/** Turns Ajv's errors into the error body's `errors[]`: exactly one entry per failed field. */
export function toFieldErrors (errors: ErrorObject[], rootName: string, data?: unknown): FieldError[] {
  const best = new Map<string, ErrorObject>()
  errors = atLeastOneOf(errors)
  const rank = (e: ErrorObject) => { const i = PRIORITY.indexOf(e.keyword); return i === -1 ? PRIORITY.length : i }
  for (const error of errors) {
    const field = fieldOf(error, rootName)
    const current = best.get(field)
    if (current === undefined || rank(error) < rank(current)) best.set(field, error)
  }
  return [...best].map(([field, error]) => {
    // A number the JSON parser would have misread (see json-body.ts) fails its field's type
    // rule; the message says what was wrong with the number itself.
    const value = error.keyword === 'type' ? valueAt(data, error.instancePath) : undefined
    return { field, message: value instanceof MisreadNumber ? value.message : messageFor(error) }
  })
}

/** What validates a body: a compiled schema, or the choice of a form (compileBody). */
type BodyValidator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null }

interface RouteValidators {
  params?: ValidateFunction
  querystring?: ValidateFunction
  body?: BodyValidator
  headers?: ValidateFunction
}

interface ObjectForm { type: 'object', properties: Record<string, unknown> }

/** A schema, or the named schema it references. */
function resolved (schema: unknown): unknown {
  const ref = (schema as { $ref?: unknown } | undefined)?.$ref
  return typeof ref === 'string' ? ajv.getSchema(ref)?.schema : schema
}

/** The forms of a body that is one of several objects (`anyOf` of object schemas, named or not), or undefined. */
function formsOf (schema: unknown): ObjectForm[] | undefined {
  const anyOf = (resolved(schema) as { anyOf?: unknown[] } | undefined)?.anyOf
  if (!Array.isArray(anyOf) || anyOf.length < 2) return undefined
  const forms = anyOf.map(resolved)
  const isForm = (form: unknown): form is ObjectForm => (form as ObjectForm).type === 'object' && typeof (form as ObjectForm).properties === 'object'
  return forms.every(isForm) ? forms : undefined
}

/**
 * A body that is one of several forms (a log-in with a password, or with a provider's code) is
 * judged against the form it is closest to: the one with the most of its members present, the
 * first on a tie. Its failures are then that form's alone, field by field, as for any other
 * body (`{"provider": "x"}` lacks `code` and `state`, not `email` and `password`); Ajv's own
 * report of an `anyOf` would mix every form's failures.
 */
function compileBody (schema: Record<string, unknown>): BodyValidator {
  const forms = formsOf(schema)
  if (forms === undefined) return ajv.compile(schema)
  // A named form is compiled once, under its name; ajv.compile returns that same validator.
  const validators = forms.map((form) => ajv.compile(form))
  const members = forms.map((form) => Object.keys(form.properties))
  const validate: BodyValidator = (data: unknown) => {
    const present = typeof data === 'object' && data !== null && !Array.isArray(data) ? data : {}
    let closest = 0
    let most = -1
    members.forEach((names, i) => {
      const count = names.filter((name) => Object.hasOwn(present, name)).length
      if (count > most) { most = count; closest = i }
    })
    const validator = validators[closest]!
    const valid = validator(data)
    validate.errors = validator.errors
    return valid
  }
  return validate
}

const compiled = new WeakMap<object, RouteValidators>()

// An operation of the API refuses a query parameter it does not define, each one named in
// `errors[]` (a misspelt filter must not silently return everything); one without query
// parameters refuses any. The routes outside /v1 (health checks, the documents) ignore theirs.
const NO_QUERY = { type: 'object', properties: {} }

function validatorsFor (schema: Record<string, unknown>, strictQuery: boolean): RouteValidators {
  let validators = compiled.get(schema)
  if (validators === undefined) {
    validators = {}
    if (schema.params !== undefined) validators.params = ajv.compile(schema.params as object)
    if (strictQuery) validators.querystring = ajv.compile({ ...(schema.querystring ?? NO_QUERY) as object, additionalProperties: false })
    else if (schema.querystring !== undefined) validators.querystring = ajv.compile(schema.querystring as object)
    if (schema.body !== undefined) validators.body = compileBody(schema.body as Record<string, unknown>)
    if (schema.headers !== undefined) validators.headers = ajv.compile(schema.headers as object)
    compiled.set(schema, validators)
  }
  return validators
}

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/
const DECIMAL_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/

/** A query value written exactly as its schema's type asks (decimal digits; `true`/`false`), converted; else as it came. */
function queryValue (type: unknown, value: string): unknown {
  if (type === 'integer' && DECIMAL_INTEGER.test(value)) return Number(value)
  if (type === 'number' && DECIMAL_NUMBER.test(value)) return Number(value)
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true'
  return value
}

interface QuerySchema { type?: unknown, items?: { type?: unknown } }

/**
 * The query with each value its schema types as integer, number or boolean converted when it
 * is written exactly so; anything else stays a string, which the schema then refuses ("must be
 * an integer"). Ajv's own coercion would also take hex, exponents, blanks and `20.0`. A
 * parameter the schema types as an array may be given once or repeated
 * (`category=BOOK&category=FOOD`); any other parameter given twice is refused by name in
 * `repeated`, whatever its values, and left out of the schema's check.
 */
function queryValues (schema: Record<string, unknown>, query: unknown, repeated: FieldError[]): unknown {
  const properties = schema.properties as Record<string, QuerySchema> | undefined
  if (properties === undefined || typeof query !== 'object' || query === null) return query
  const values: Record<string, unknown> = { ...query }
  for (const [name, value] of Object.entries(values)) {
    if (!Object.hasOwn(properties, name)) continue
    const property = properties[name]!
    if (property.type === 'array') {
      const list: unknown[] = Array.isArray(value) ? value : [value]
      values[name] = list.map((each) => typeof each === 'string' ? queryValue(property.items?.type, each) : each)
    } else if (Array.isArray(value)) {
      repeated.push({ field: name, message: 'must be given once' })
      delete values[name]
    } else if (typeof value === 'string') {
      values[name] = queryValue(property.type, value)
    }
  }
  return values
}

/**
 * A header's field is its name as the documentation writes it (`Idempotency-Key`, `If-Match`):
 * Node gives header names in lower case, and the schemas name them so.
 */
function headerField (error: FieldError): FieldError {
  return { ...error, field: documentedHeaderName(error.field) }
}

/** A header's name as the documentation writes it, from Node's lower-case one. */
export function documentedHeaderName (name: string): string {
  return HEADER_NAMES[name] ?? name.replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase())
}

/** Header names not written word by word with a capital each (the specification's spelling). */
const HEADER_NAMES: Record<string, string> = { 'last-event-id': 'Last-Event-ID' }

function validateRequest (request: FastifyRequest): void {
  const route = routeOf(request)
  const schema = route.schema as Record<string, unknown> | undefined
  if (schema === undefined) return
  const validators = validatorsFor(schema, route.config.url?.startsWith('/v1/') === true)
  const errors: FieldError[] = []
  if (validators.params !== undefined && !validators.params(request.params)) {
    errors.push(...toFieldErrors(validators.params.errors ?? [], 'path'))
  }
  if (validators.querystring !== undefined) {
    // Without query parameters there is nothing to convert: the query is only checked to be empty.
    const repeated: FieldError[] = []
    const query = schema.querystring === undefined ? request.query : queryValues(schema.querystring as Record<string, unknown>, request.query, repeated)
    const valid = validators.querystring(query)
    const rules = route.config.queryRules
    if (valid && repeated.length === 0 && rules === undefined) request.query = query
    else {
      const failed = valid ? [] : toFieldErrors(validators.querystring.errors ?? [], 'query')
      // Rules between parameters (minPrice ≤ maxPrice), on the values that passed their own
      // rules: a parameter that failed is not there for them (maxPrice=-5 is one error, not two).
      const related = rules === undefined ? [] : rules(withoutFields(query as Record<string, unknown>, failed))
      const queryErrors = uniqueFields([...repeated, ...failed, ...related])
      if (queryErrors.length === 0) request.query = query
      else errors.push(...queryErrors)
    }
  }
  if (validators.body !== undefined) {
    // No body at all where one is required reads as an empty object: every required field is named.
    if (request.body === undefined) request.body = {}
    const valid = validators.body(request.body)
    const rules = route.config.bodyRules
    // A valid body on a route without rules (nearly every write) costs nothing more.
    if (!valid || rules !== undefined) {
      const failed = valid ? [] : toFieldErrors(validators.body.errors ?? [], 'body', request.body)
      const body = request.body
      const related = rules === undefined || typeof body !== 'object' || body === null || Array.isArray(body)
        ? []
        : rules(withoutFields(body as Record<string, unknown>, failed))
      errors.push(...uniqueFields([...failed, ...related]))
    }
  }
  if (validators.headers !== undefined && !validators.headers(request.headers)) {
    errors.push(...toFieldErrors(validators.headers.errors ?? [], 'headers').map(headerField))
  }
  if (errors.length > 0) throw fieldsInvalid(errors)
}

/** The query or body without the members these errors name (`category[1]` names `category`). */
function withoutFields (query: Record<string, unknown>, errors: FieldError[]): Record<string, unknown> {
  const passed = { ...query }
  for (const error of errors) delete passed[/^[^[.]*/.exec(error.field)![0]]
  return passed
}

/** One entry per field, the first found. */
function uniqueFields (errors: FieldError[]): FieldError[] {
  const seen = new Set<string>()
  return errors.filter((error) => !seen.has(error.field) && seen.add(error.field) !== undefined)
}

/** At most this many entries in `errors[]`, so the answer to a body of many bad members stays small. */
export const MAX_FIELD_ERRORS = 50

function fieldsInvalid (errors: FieldError[]): ApiError {
  if (errors.length <= MAX_FIELD_ERRORS) return new ApiError('VALIDATION_ERROR', { errors })
  return new ApiError('VALIDATION_ERROR', {
    message: `The request has ${errors.length} invalid fields; the first ${MAX_FIELD_ERRORS} are listed.`,
    errors: errors.slice(0, MAX_FIELD_ERRORS)
  })
}

export const validation = fp(async (app) => {
  // Fastify's own per-part validation is replaced by the hook below (see the top of this file);
  // the route schemas still drive serialisation, the TypeScript types and the OpenAPI document.
  app.setValidatorCompiler(() => () => true)
  // A callback hook (no promise per request); Fastify answers a synchronous throw with the error
  // handler exactly as it does a rejection.
  app.addHook('preValidation', (request, _reply, done) => {
    validateRequest(request)
    done()
  })
  // The named schemas the routes reference (`$ref: 'Post'`), known to our Ajv as to Fastify.
  app.addHook('onReady', async function () {
    for (const schema of Object.values(this.getSchemas()) as Array<{ $id: string }>) {
      if (ajv.getSchema(schema.$id) === undefined) ajv.addSchema(schema)
    }
  })
}, { name: 'validation', dependencies: ['error-handler'] })
