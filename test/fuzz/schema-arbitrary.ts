import fc from 'fast-check'
import type { Schema } from './openapi-operations.js'

// A small JSON Schema → fast-check converter for exactly the keywords our OpenAPI document uses.
// A keyword it does not know is an error, not a silent skip: a new rule in the document must be
// taught here before the fuzzer claims to cover it. Patterns are not run through a regex engine:
// the document uses a few known shapes (non-blank, a decimal id or sequence, a printable-ASCII key), and
// each has its own generator.

/** Keywords that only describe; they constrain nothing. */
const ANNOTATIONS = new Set(['description', 'title', 'examples', 'example', 'default', 'readOnly', 'writeOnly', 'deprecated', '$schema', '$comment'])
/** Keywords the converter understands. */
const CONSTRAINTS = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'uniqueItems', 'minLength', 'maxLength', 'pattern',
  'enum', 'const', 'minimum', 'maximum', 'format', 'anyOf', 'oneOf', 'allOf', 'minProperties', 'nullable',
  // The document's own keywords (see src/pipeline/validation.ts).
  'x-well-formed', 'x-int64-id', 'x-cursor', 'x-sorted-cursor', 'x-require-one-of'
])

export const HAS_WORD = '[\\p{L}\\p{N}]'
import { ID_PATTERN, NON_BLANK, WELL_FORMED } from '../../src/http/schemas.js'
import { PROVIDER_ID } from '../../src/oidc/oidc.config.js'
export { ID_PATTERN, NON_BLANK, WELL_FORMED }
export const SEQUENCE_PATTERN = '^(0|[1-9][0-9]{0,15})$'
export const PRINTABLE_KEY_PATTERN = '^[\\x21-\\x7E]([\\x20-\\x7E]*[\\x21-\\x7E])?$'
/** An identity provider's id (OIDC_PROVIDERS). */
export const PROVIDER_PATTERN = PROVIDER_ID.source
/** An image's SHA-256 (responses only). */
const SHA256_PATTERN = '^[0-9a-f]{64}$'
const KNOWN_PATTERNS = [NON_BLANK, WELL_FORMED, ID_PATTERN, SEQUENCE_PATTERN, PRINTABLE_KEY_PATTERN, HAS_WORD, PROVIDER_PATTERN, SHA256_PATTERN]
// `binary`: an upload's body (an image or a form), never JSON: the fuzzer sends those no JSON body.
const KNOWN_FORMATS = ['email', 'int64', 'date-time', 'uri', 'binary']

export const MAX_ID = 9223372036854775807n

/** Throws when a schema (at any depth) uses a keyword, pattern or format the fuzzer does not know. */
export function assertUnderstood (schema: Schema, where: string): void {
  if (typeof schema !== 'object' || schema === null) throw new Error(`${where}: not a schema: ${JSON.stringify(schema)}`)
  for (const key of Object.keys(schema)) {
    if (!ANNOTATIONS.has(key) && !CONSTRAINTS.has(key)) {
      throw new Error(`${where}: the fuzzer does not understand the schema keyword "${key}" (${JSON.stringify(schema).slice(0, 200)})`)
    }
  }
  if (schema.pattern !== undefined && !KNOWN_PATTERNS.includes(schema.pattern)) {
    throw new Error(`${where}: the fuzzer has no generator for the pattern ${JSON.stringify(schema.pattern)}`)
  }
  if (schema.format !== undefined && !KNOWN_FORMATS.includes(schema.format)) {
    throw new Error(`${where}: the fuzzer has no generator for the format ${JSON.stringify(schema.format)}`)
  }
  for (const [name, sub] of Object.entries<Schema>(schema.properties ?? {})) assertUnderstood(sub, `${where}.${name}`)
  if (typeof schema.additionalProperties === 'object') assertUnderstood(schema.additionalProperties, `${where}.*`)
  if (schema.items !== undefined) assertUnderstood(schema.items, `${where}[]`)
  for (const key of ['anyOf', 'oneOf', 'allOf']) (schema[key] ?? []).forEach((sub: Schema, i: number) => assertUnderstood(sub, `${where}.${key}[${i}]`))
}

/**
 * The schema with its `allOf` folded in: one schema that says what all the parts say (members'
 * rules merged, required lists joined). The document narrows a shared shape this way (an error
 * body whose `code` is one of an operation's codes).
 */
export function withoutAllOf (schema: Schema): Schema {
  if (schema.allOf === undefined) return schema
  const { allOf, ...rest } = schema
  return (allOf as Schema[]).map(withoutAllOf).reduce<Schema>((merged, part) => {
    const properties: Record<string, Schema> = { ...merged.properties }
    for (const [name, sub] of Object.entries<Schema>(part.properties ?? {})) properties[name] = { ...properties[name], ...sub }
    const required = [...new Set([...(merged.required ?? []), ...(part.required ?? [])])]
    return { ...merged, ...part, ...(Object.keys(properties).length > 0 ? { properties } : {}), ...(required.length > 0 ? { required } : {}) }
  }, rest)
}

/**
 * The members of which an object must carry at least one: `anyOf` whose branches each only
 * require one member (`anyOf: [{required: [a]}, {required: [b]}]`), or the older `x-require-one-of`.
 */
export function atLeastOneOf (schema: Schema): string[] {
  if (Array.isArray(schema['x-require-one-of'])) return schema['x-require-one-of']
  const branches: Schema[] | undefined = schema.anyOf
  if (branches === undefined || !branches.every((b) => Object.keys(b).length === 1 && Array.isArray(b.required) && b.required.length === 1)) return []
  return branches.map((b) => b.required[0] as string)
}

// ---- strings ---------------------------------------------------------------------------------

/** One code point of ordinary text: mostly ASCII, some Latin, CJK, emoji, combining marks, RTL. */
const textChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.constantFrom('é', 'ß', 'Ж', '字', '😀', '🇫', '\u0301', '\u200f', 'ا', '\u00a0', '\t', '\n') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\u0000') }
)
const visibleChar = fc.constantFrom('a', 'Z', '7', 'é', '字', '😀', '-', '!')
const blankChar = fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\u3000', '\ufeff')

function codePoints (s: string): number { return [...s].length }

/** Text of `min`..`max` code points, without NUL, with at least one non-white-space character. */
export function nonBlankText (min: number, max: number): fc.Arbitrary<string> {
  const upper = Math.min(max, Math.max(min, 40))
  return fc.tuple(fc.array(textChar, { minLength: Math.max(0, min - 1), maxLength: Math.max(0, upper - 1) }), visibleChar, fc.nat())
    .map(([chars, visible, at]) => { const all = [...chars]; all.splice(at % (all.length + 1), 0, visible); return all.join('') })
}

/** Only white space (or nothing), `min`..`max` code points. */
export function blankText (min: number, max: number): fc.Arbitrary<string> {
  return fc.array(blankChar, { minLength: min, maxLength: Math.max(min, Math.min(max, 6)) }).map((c) => c.join(''))
}

/** A decimal id string (1 to 2^63-1), small ids more often than huge ones. */
export const idString = fc.oneof(
  fc.integer({ min: 1, max: 1000 }).map(String),
  fc.bigInt(1n, MAX_ID).map(String),
  fc.constantFrom('1', '9007199254740991', '9007199254740993', MAX_ID.toString())
)

/** A WHATWG-valid e-mail address (the `valid e-mail address` production of HTML). */
const localChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.!#$%&\'*+/=?^_`{|}~-')
const labelEdge = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')
const label = fc.tuple(labelEdge, fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'), maxLength: 10 }), labelEdge)
  .map(([a, middle, b]) => middle === '' ? a : a + middle + b)
export const emailAddress = fc.tuple(fc.string({ unit: localChar, minLength: 1, maxLength: 20 }), fc.array(label, { minLength: 1, maxLength: 3 }))
  .map(([local, labels]) => `${local}@${labels.join('.')}`)

/** An opaque list cursor as the service issues it (see src/http/paging.ts). */
export const cursorString = fc.bigInt(1n, MAX_ID).map((id) => Buffer.from(`v1:${id}`).toString('base64url'))

/**
 * A cursor of a sorted list in the form the service issues (src/http/sorted-paging.ts), for no
 * list in particular: a list answers it 400 CURSOR_MISMATCH, which its document names.
 */
export const sortedCursorString = fc.tuple(fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_'), minLength: 16, maxLength: 16 }), fc.string({ maxLength: 30 }), fc.bigInt(1n, MAX_ID))
  .map(([fingerprint, key, id]) => Buffer.from(`v2:${JSON.stringify([fingerprint, key, id.toString()])}`).toString('base64url'))

const printableKey = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 40 })

function stringArbitrary (schema: Schema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0
  const max = schema.maxLength ?? 200
  if (schema['x-int64-id'] === true || schema.pattern === ID_PATTERN) return idString
  if (schema['x-cursor'] === true) return cursorString
  if (schema['x-sorted-cursor'] === true) return sortedCursorString
  // Text with at least one letter or digit somewhere in it.
  if (schema.pattern === HAS_WORD) {
    return fc.tuple(fc.array(textChar, { maxLength: Math.min(max - 1, 20) }), fc.constantFrom('a', 'Z', '7', 'é', 'ж', '字'), fc.array(textChar, { maxLength: Math.min(max - 1, 20) }))
      .map(([before, word, after]) => before.join('') + word + after.join('')).filter((s) => s.length >= min && s.length <= max)
  }
  if (schema.format === 'email') return emailAddress.filter((e) => codePoints(e) <= max)
  // A URL the fuzz app's configuration accepts as a webhook target (WEBHOOK_ALLOW_HOSTS=127.0.0.1).
  if (schema.format === 'uri') return fc.tuple(fc.integer({ min: 1, max: 65535 }), fc.webPath()).map(([port, path]) => `http://127.0.0.1:${port}${path}`)
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4102444800000) }).map((d) => d.toISOString())
  if (schema.pattern === SEQUENCE_PATTERN) return fc.oneof(fc.constant('0'), fc.bigInt(1n, 10n ** 16n - 1n).map(String))
  if (schema.pattern === PRINTABLE_KEY_PATTERN) return printableKey.filter((k) => k.length >= min && k.length <= max)
  if (schema.pattern === NON_BLANK) return nonBlankText(Math.max(min, 1), max)
  if (schema.pattern === PROVIDER_PATTERN) return fc.stringMatching(PROVIDER_ID).filter((s) => s.length >= min && s.length <= max)
  if (schema.pattern === SHA256_PATTERN) return fc.stringMatching(/^[0-9a-f]{64}$/)
  return fc.array(textChar, { minLength: min, maxLength: Math.min(max, min + 40) }).map((c) => c.join(''))
}

// ---- numbers ---------------------------------------------------------------------------------

function integerArbitrary (schema: Schema): fc.Arbitrary<number> {
  const min = Math.max(schema.minimum ?? -1_000_000, -Number.MAX_SAFE_INTEGER)
  const max = Math.min(schema.maximum ?? (schema.format === 'int64' ? Number.MAX_SAFE_INTEGER : 1_000_000), Number.MAX_SAFE_INTEGER)
  return fc.oneof(
    fc.constantFrom(min, max),
    fc.integer({ min: Math.max(min, -1000), max: Math.min(max, Math.max(min, -1000) + 1000) }),
    fc.bigInt(BigInt(min), BigInt(max)).map(Number)
  )
}

// ---- the converter -----------------------------------------------------------------------------

/** Lets a caller choose the values of some object members (real ids instead of random ones). */
export type MemberHint = (name: string, schema: Schema) => fc.Arbitrary<unknown> | undefined

export interface ArbitraryOptions {
  member?: MemberHint
  /** Optional members are left out with this frequency (1 in n); 0 never leaves them out. */
  omitOptional?: number
}

function typesOf (schema: Schema): string[] | undefined {
  const types = Array.isArray(schema.type) ? [...schema.type] : schema.type === undefined ? undefined : [schema.type]
  if (schema.nullable === true && types !== undefined && !types.includes('null')) types.push('null')
  return types
}

/** An arbitrary producing values that the schema accepts. */
export function validArbitrary (original: Schema, options: ArbitraryOptions = {}, where = 'schema'): fc.Arbitrary<unknown> {
  assertUnderstood(original, where)
  const schema = withoutAllOf(original)
  if ('const' in schema) return fc.constant(schema.const)
  if (schema.enum !== undefined) return fc.constantFrom(...(schema.enum as unknown[]))
  if (schema.type === 'object' && atLeastOneOf(schema).length > 0) return objectArbitrary(schema, options, where)
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (schema[key] !== undefined) {
      const { [key]: branches, ...rest } = schema
      return fc.oneof(...(branches as Schema[]).map((b, i) => validArbitrary({ ...rest, ...b }, options, `${where}.${key}[${i}]`)))
    }
  }
  const types = typesOf(schema)
  if (types === undefined) {
    // No type: any JSON value (the read-only members that are accepted and ignored).
    return fc.jsonValue({ maxDepth: 2 })
  }
  if (types.length > 1) return fc.oneof(...types.map((type) => validArbitrary({ ...schema, type, nullable: undefined }, options, where)))
  switch (types[0]) {
    case 'null': return fc.constant(null)
    case 'boolean': return fc.boolean()
    case 'integer': return integerArbitrary(schema)
    case 'number': return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true })
    case 'string': return stringArbitrary(schema)
    case 'array': {
      const items = validArbitrary(schema.items ?? {}, options, `${where}[]`)
      const sizes = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 3, 3) }
      return schema.uniqueItems === true ? fc.uniqueArray(items, { ...sizes, selector: (item) => JSON.stringify(item) }) : fc.array(items, sizes)
    }
    case 'object': return objectArbitrary(schema, options, where)
    default: throw new Error(`${where}: unknown type ${JSON.stringify(types[0])}`)
  }
}

function objectArbitrary (schema: Schema, options: ArbitraryOptions, where: string): fc.Arbitrary<Record<string, unknown>> {
  const properties: Record<string, Schema> = schema.properties ?? {}
  const required: string[] = schema.required ?? []
  const omit = options.omitOptional ?? 2
  const members = Object.entries(properties).map(([name, sub]) => {
    const arbitrary = options.member?.(name, sub) ?? validArbitrary(sub, options, `${where}.${name}`)
    const present = required.includes(name) || omit === 0 ? fc.constant(true) : fc.nat(omit - 1).map((n) => n !== 0)
    return fc.tuple(fc.constant(name), present, arbitrary)
  })
  const atLeastOne = atLeastOneOf(schema)
  const minProperties: number = schema.minProperties ?? 0
  return fc.tuple(fc.tuple(...members), fc.nat()).map(([entries, pick]) => {
    const value: Record<string, unknown> = {}
    for (const [name, present, v] of entries) if (present) value[name] = v
    // A body that must carry one of some members (or a minimum count) gets them from the
    // generated values it left out.
    const missing = (names: string[]) => names.filter((n) => !Object.hasOwn(value, n))
    if (atLeastOne.length > 0 && missing(atLeastOne).length === atLeastOne.length) {
      const name = atLeastOne[pick % atLeastOne.length]!
      value[name] = entries.find(([n]) => n === name)![2]
    }
    for (const [name, , v] of entries) {
      if (Object.keys(value).length >= minProperties) break
      if (!Object.hasOwn(value, name)) value[name] = v
    }
    return value
  })
}
