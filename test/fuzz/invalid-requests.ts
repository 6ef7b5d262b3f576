import fc from 'fast-check'
import { breakersOf, type Breaker } from './invalid-values.js'
import { documentedHeaderName } from '../../src/pipeline/validation.js'
import { atLeastOneOf, PRINTABLE_KEY_PATTERN, SEQUENCE_PATTERN, withoutAllOf } from './schema-arbitrary.js'
import type { Operation, Schema } from './openapi-operations.js'
import { validRequest, type GeneratedRequest } from './request-arbitrary.js'

// Requests with one or several fields broken, and the set of fields the answer must name. A
// generated valid request is the starting point; each chosen field is broken by one rule of its
// schema (wrong type, too long, blank, missing when required, out of range, not in the
// enumeration, not an id, …), an unknown member is added, or the whole body is made something
// other than an object.

export interface InvalidRequest {
  request: GeneratedRequest
  /** The fields the 400 must name, exactly. */
  fields: string[]
  /** What was broken, for the failure message. */
  broken: string[]
}

type Edit = (r: GeneratedRequest) => GeneratedRequest

interface Target {
  /** The field the answer names; for an added member, decided when generated. */
  name: string
  /** Targets that cannot be combined with this one (they edit the same thing). */
  excludes: (other: Target) => boolean
  edit: fc.Arbitrary<{ edit: Edit, field: string, rule: string }>
}

const UNKNOWN_MEMBERS = ['role', 'isAdmin', 'admin', 'authorId', 'password_hash', 'zz', 'Title', 'NAME', 'e-mail', 'constructor', 'toString', '$where', 'a.b', '']

function setPart (part: 'path' | 'query' | 'headers', name: string, value: unknown): Edit {
  return (r) => ({ ...r, [part]: { ...r[part], [name]: value } })
}

function setMember (name: string, value: unknown): Edit {
  return (r) => {
    const body = { ...(r.body as Record<string, unknown>) }
    // defineProperty, so that a name such as "constructor" is an own member like any other.
    Object.defineProperty(body, name, { value, enumerable: true, configurable: true, writable: true })
    return { ...r, body }
  }
}

function removeMembers (names: string[]): Edit {
  return (r) => {
    const body = { ...(r.body as Record<string, unknown>) }
    for (const name of names) delete body[name]
    return { ...r, body }
  }
}

const broken = (breakers: Breaker[], make: (value: unknown) => Edit, field: string) =>
  fc.oneof(...breakers.map((b) => b.value.map((value) => ({ edit: make(value), field, rule: `${field}: ${b.rule} (${JSON.stringify(value)?.slice(0, 60)})` }))))

function targetsOf (op: Operation, body: Schema | undefined): Target[] {
  const bodySchema = body === undefined ? undefined : withoutAllOf(body)
  const targets: Target[] = []
  const independent = () => false
  for (const p of op.parameters) {
    if (p.in === 'header') {
      // Header values stay visible ASCII or Latin-1, as they would over a real connection; the
      // field is the header's name written the usual way (Idempotency-Key).
      const field = documentedHeaderName(p.name)
      const breakers: Breaker[] = []
      if (p.schema.maxLength !== undefined) breakers.push({ rule: 'too long', value: fc.integer({ min: p.schema.maxLength + 1, max: p.schema.maxLength + 20 }).map((n) => 'k'.repeat(n)) })
      if (p.schema.pattern === PRINTABLE_KEY_PATTERN) breakers.push({ rule: 'not printable ASCII', value: fc.constantFrom('caf\u00e9', '\u00ff', 'a\u00a0b') })
      if (p.schema.pattern === SEQUENCE_PATTERN) breakers.push({ rule: 'not a sequence', value: fc.constantFrom('abc', '-1', '01', '1.5', '1e3', ' 7', '0x10', '99999999999999999') })
      if (breakers.length > 0) targets.push({ name: field, excludes: independent, edit: broken(breakers, (v) => setPart('headers', p.name, v), field) })
      continue
    }
    if (p.in !== 'path' && p.in !== 'query') continue
    const breakers = breakersOf(p.schema, p.in, `${op.key} ${p.in} ${p.name}`)
    if (breakers.length > 0) targets.push({ name: p.name, excludes: independent, edit: broken(breakers, (v) => setPart(p.in as 'path' | 'query', p.name, v), p.name) })
  }
  // A body that is no JSON object at all, which no member's edit can be combined with.
  const notAnObject = (excludes: Target['excludes']): Target => ({
    name: '(body)',
    excludes,
    edit: fc.constantFrom<unknown>([], ['a'], 'text', 42, true, null).map((value) => ({ edit: (r: GeneratedRequest) => ({ ...r, body: value }), field: 'body', rule: `body: ${JSON.stringify(value)}` }))
  })
  // A body of several forms (a log-in by password or by a provider's code) is judged as the form
  // whose members it has; its members' failures are tested form by form in the feature's own
  // tests (test/sessions/, test/oidc/). Here: a body that is no object at all.
  if (bodySchema !== undefined && Array.isArray(bodySchema.anyOf) && bodySchema.anyOf.every((form: Schema) => form.type === 'object')) {
    targets.push(notAnObject((o) => o.name.startsWith('(')))
    return targets
  }
  if (bodySchema === undefined || bodySchema.type !== 'object') return targets
  const properties: Record<string, Schema> = bodySchema.properties ?? {}
  const required: string[] = bodySchema.required ?? []
  const memberTargets = new Set<string>()
  for (const [name, schema] of Object.entries(properties)) {
    const options: fc.Arbitrary<{ edit: Edit, field: string, rule: string }>[] = []
    const breakers = breakersOf(schema, 'body', `${op.key} body ${name}`)
    if (breakers.length > 0) options.push(broken(breakers, (v) => setMember(name, v), name))
    if (required.includes(name)) options.push(fc.constant({ edit: removeMembers([name]), field: name, rule: `${name}: missing` }))
    if (options.length === 0) continue
    memberTargets.add(name)
    targets.push({ name, excludes: (o) => o.name === '(body)' || (o.name === '(none of)' && atLeastOneOf(bodySchema).includes(name)), edit: fc.oneof(...options) })
  }
  if (bodySchema.additionalProperties === false) {
    targets.push({
      name: '(unknown member)',
      excludes: (o) => o.name === '(body)',
      edit: fc.constantFrom(...UNKNOWN_MEMBERS.filter((n) => !Object.hasOwn(properties, n))).chain((name) =>
        fc.jsonValue({ maxDepth: 1 }).map((value) => ({ edit: setMember(name, value), field: name, rule: `${name}: unknown member` })))
    })
  }
  const oneOf = atLeastOneOf(bodySchema)
  if (oneOf.length > 0) {
    targets.push({
      name: '(none of)',
      excludes: (o) => o.name === '(body)' || oneOf.includes(o.name),
      edit: fc.constant({ edit: removeMembers(oneOf), field: 'body', rule: `body: none of ${oneOf.join(', ')}` })
    })
  }
  targets.push(notAnObject((o) => memberTargets.has(o.name) || o.name.startsWith('(')))
  return targets
}

/** Operations with at least one field a client can get wrong. */
export function canBreak (op: Operation): boolean {
  return targetsOf(op, op.body?.media['application/json']).length > 0
}

export function invalidRequest (op: Operation): fc.Arbitrary<InvalidRequest> {
  const targets = targetsOf(op, op.body?.media['application/json'])
  const chosen = fc.subarray(targets, { minLength: 1, maxLength: Math.min(3, targets.length) })
    .filter((list) => list.every((a) => list.every((b) => a === b || (!a.excludes(b) && !b.excludes(a)))))
  return fc.tuple(validRequest(op), chosen.chain((list) => fc.tuple(...list.map((t) => t.edit)))).map(([request, edits]) => {
    let result = request
    for (const { edit } of edits) result = edit(result)
    // Merge patch shares the JSON body's rules; the breaking is judged the same either way.
    return { request: result, fields: [...new Set(edits.map((e) => e.field))].sort(), broken: edits.map((e) => e.rule) }
  })
}
