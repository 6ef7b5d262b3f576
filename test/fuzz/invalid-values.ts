import fc from 'fast-check'
import type { Schema } from './openapi-operations.js'
import { assertUnderstood, blankText, HAS_WORD, ID_PATTERN, MAX_ID, NON_BLANK, nonBlankText, PRINTABLE_KEY_PATTERN, PROVIDER_PATTERN, withoutAllOf } from './schema-arbitrary.js'

// Values that break one field's schema, each labelled with the rule it breaks. A value's place
// decides its form: a body member is any JSON value, a path or query parameter is always a
// string (the same rules, written as text).

export type Place = 'body' | 'path' | 'query'

export interface Breaker {
  rule: string
  value: fc.Arbitrary<unknown>
}

const WRONG_TYPES: Record<string, unknown[]> = {
  string: [1, 0, -1.5, true, false, null, [], ['a'], {}, { a: 1 }],
  integer: ['5', '1', 1.5, -0.5, true, null, [], {}, 'abc'],
  number: ['5', true, null, [], {}],
  boolean: ['true', 'false', 0, 1, null, [], {}],
  object: ['x', 1, true, null, [], [{}]],
  array: ['x', 1, true, null, {}]
}

/** Id-like texts that are not ids from 1 to 2^63-1 (and are still one path segment). */
const BAD_ID_TEXTS = fc.oneof(
  fc.constantFrom('0', '00', '01', '-1', '+1', '1.0', '1e3', '0x10', ' 1', '1 ', 'abc', '１', '٣', '9223372036854775808',
    '99999999999999999999', '18446744073709551616', 'null', 'true', '[]', '1,2', '%', '\u00a0'),
  fc.bigInt(MAX_ID + 1n, MAX_ID * 1000n).map(String),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((s) => !/^[1-9][0-9]{0,18}$/.test(s) && s !== '.' && s !== '..')
)

function typesOf (schema: Schema): string[] {
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]
  return schema.nullable === true ? [...types, 'null'] : types
}

function jsonType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function accepts (types: string[], value: unknown): boolean {
  const type = jsonType(value)
  return types.includes(type) || (type === 'integer' && types.includes('number'))
}

/** The ways to break a value of this schema at this place (empty when nothing breaks it). */
export function breakersOf (original: Schema, place: Place, where = 'schema'): Breaker[] {
  assertUnderstood(original, where)
  const schema = withoutAllOf(original)
  const types = typesOf(schema)
  const list: Breaker[] = []
  const type = types.find((t) => t !== 'null')
  const asText = (value: fc.Arbitrary<unknown>) => place === 'body' ? value : value.map((v) => typeof v === 'string' ? v : JSON.stringify(v))
  if (place === 'body' && type !== undefined) {
    const wrong = (WRONG_TYPES[type] ?? []).filter((v) => !accepts(types, v))
    if (wrong.length > 0) list.push({ rule: 'wrong type', value: fc.constantFrom(...wrong) })
  }
  if (place !== 'body' && (type === 'integer' || type === 'number')) {
    list.push({ rule: 'not a number', value: fc.constantFrom('abc', '', ' 20', '0x14', '2e1', '1.5', 'true', '１') })
  }
  if (type === 'string') {
    const max = schema.maxLength
    const min = schema.minLength ?? 0
    const nonBlank = schema.pattern === NON_BLANK
    if (max !== undefined) list.push({ rule: 'too long', value: nonBlankText(max + 1, max + 3).filter((s) => [...s].length > max) })
    if (min > 1) list.push({ rule: 'too short', value: nonBlankText(1, min - 1).filter((s) => [...s].length < min) })
    if (nonBlank) list.push({ rule: 'blank', value: blankText(Math.max(min, place === 'body' ? 0 : 1), max ?? 6) })
    if (schema['x-well-formed'] === true && place === 'body') {
      list.push({ rule: 'NUL or unpaired surrogate', value: fc.tuple(fc.constantFrom('\u0000', '\ud800', '\udfff'), fc.constantFrom('ab', 'x y', 'title')).map(([bad, text]) => text + bad) })
    }
    if (schema['x-int64-id'] === true || schema.pattern === ID_PATTERN) list.push({ rule: 'not an id', value: BAD_ID_TEXTS })
    if (schema.pattern === PROVIDER_PATTERN) list.push({ rule: 'not a provider id', value: fc.constantFrom('GitLab', '-lead', 'has space', 'ü', 'a.b') })
    if (schema.pattern === PRINTABLE_KEY_PATTERN) list.push({ rule: 'not printable ASCII', value: fc.constantFrom(' lead', 'trail ', 'tab\tkey') })
    if (schema['x-sorted-cursor'] === true) list.push({ rule: 'not a cursor', value: fc.constantFrom('abc', 'djE6MA', Buffer.from('v1:5').toString('base64url'), Buffer.from('v2:[]').toString('base64url'), '!!!') })
    if (schema.pattern === HAS_WORD) list.push({ rule: 'no word', value: fc.constantFrom('***', '"" ()', '- | !', '   ', ':*', '&') })
    if (schema['x-cursor'] === true) list.push({ rule: 'not a cursor', value: fc.constantFrom('abc', 'djE6MA', 'djE6LTE', Buffer.from('v2:5').toString('base64url'), '!!!', 'x'.repeat(201)) })
    if (schema.format === 'uri') list.push({ rule: 'not a URL the service may request', value: fc.constantFrom('plain', '/relative/path', 'http://', 'https://10.0.0.1/x', 'https://[::1]/x', 'ftp://example.com/', 'https://user:pw@example.com/', 'http://169.254.169.254/latest') })
    if (schema.format === 'date-time') list.push({ rule: 'not an RFC 3339 timestamp', value: fc.constantFrom('yesterday', '2026-11-25', '2026-11-25T10:00:00', '2026-02-30T00:00:00Z', '2026-11-25T24:00:00Z', '1764064800') })
    if (schema.format === 'email') list.push({ rule: 'not an e-mail', value: fc.constantFrom('plain', 'a@', '@b.c', 'a b@c.d', 'a@b..c', 'a@-b.c', 'a@b_c.d', 'ü@b.c', 'a@@b.c') })
    if (schema.enum !== undefined) {
      // Other spellings of the members (an enumeration in lower case already has its lower-case form).
      const near = ['UNKNOWN', '', ...schema.enum.map((e: unknown) => String(e).toLowerCase()), ...schema.enum.map((e: unknown) => String(e).toUpperCase()), ...schema.enum.map((e: unknown) => ` ${String(e)}`)]
      list.push({ rule: 'not in the enumeration', value: fc.constantFrom(...new Set(near.filter((v) => !schema.enum.includes(v)))) })
    }
  }
  if (type === 'integer' || type === 'number') {
    const ranges: fc.Arbitrary<unknown>[] = []
    if (schema.minimum !== undefined) ranges.push(asText(fc.constantFrom(schema.minimum - 1, schema.minimum - 1000)))
    if (schema.maximum !== undefined) ranges.push(asText(fc.constantFrom(schema.maximum + 1, schema.maximum * 10)))
    if (ranges.length > 0) list.push({ rule: 'out of range', value: fc.oneof(...ranges) })
    if (type === 'integer') list.push({ rule: 'not whole', value: asText(fc.constantFrom(1.5, 2.25)) })
  }
  if (schema.const !== undefined) list.push({ rule: 'not the constant', value: fc.constant(`${String(schema.const)}x`) })
  if (type === 'array' && schema.uniqueItems === true && Array.isArray(schema.items?.enum) && place === 'body') {
    list.push({ rule: 'an item twice', value: fc.constantFrom(...(schema.items.enum as unknown[])).map((item) => [item, item]) })
  }
  return list
}
