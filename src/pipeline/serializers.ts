import fastJsonStringify, { type AnySchema, type Options } from 'fast-json-stringify'

// Response serializers, compiled once per schema and shared. Fastify's default compiler builds a
// fast-json-stringify serializer for every status of every route (about 1,100 here, HEAD routes
// included) although they hold about 70 distinct schemas, and hands each build every named
// schema of the app (about 70), each of which fast-json-stringify checks and indexes again: that
// was about 4.5 s of a 7 s start-up, and about 2 s of every app a test builds
// (docs/PERFORMANCE.md, Start-up). Here a build gets only the named schemas its schema reaches
// through `$ref`, and its result is kept by the text of that schema and of those, for every app
// of the process. It is the serializer fast-json-stringify makes from those very definitions, so
// the bytes are the same (test/pipeline/serializers.test.ts compares the generated code).

type Schema = Record<string, unknown>
type Serialize = (value: unknown) => string

/** What the compiler is handed per route and status (and per schema a reply compiles itself). */
interface RouteSchema { schema?: unknown }

// By the text of the options, the schema and every named schema it reaches.
const compiled = new Map<string, Serialize>()

/** The `$id`s a schema names in its `$ref`s (the part before `#`; a ref within the schema itself names none). */
function referencedIds (schema: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) referencedIds(item, into)
  } else if (typeof schema === 'object' && schema !== null) {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') {
        const id = value.split('#', 1)[0]!
        if (id !== '') into.add(id)
      } else {
        referencedIds(value, into)
      }
    }
  }
  return into
}

/**
 * The `$id`s of the named schemas this schema reaches through `$ref`, transitively, sorted;
 * undefined when a reference names none of them (an `$id` nested inside another schema, say):
 * such a build gets them all, as Fastify's own compiler gives it.
 */
export function reachableSchemas (schema: unknown, external: Record<string, Schema>): string[] | undefined {
  const found = new Set<string>()
  const pending = [...referencedIds(schema, new Set())]
  while (pending.length > 0) {
    const id = pending.pop()!
    if (found.has(id)) continue
    const target = external[id]
    if (target === undefined) return undefined
    found.add(id)
    pending.push(...referencedIds(target, new Set()))
  }
  return [...found].sort()
}

/**
 * Fastify's `schemaController.compilersFactory.buildSerializer`: given an app's named schemas and
 * serializer options, the compiler of its response schemas, which builds each distinct one once
 * per process.
 */
export function sharedSerializers (externalSchemas: unknown = {}, options: Options = {}): (route: RouteSchema) => Serialize {
  const external = (externalSchemas ?? {}) as Record<string, Schema>
  const optionsText = JSON.stringify(options)
  // Each named schema's text, written once per app (they are that app's own copies).
  const texts = new Map<string, string>()
  const textOf = (id: string): string => {
    let text = texts.get(id)
    if (text === undefined) {
      text = JSON.stringify(external[id])
      texts.set(id, text)
    }
    return text
  }
  return (route) => {
    const schema = route.schema as Schema
    // As @fastify/fast-json-stringify-compiler does: a root schema that is itself one of the
    // named ones is not handed to its own build a second time.
    const candidates = typeof schema.$id === 'string' ? Object.keys(external).filter((id) => id !== schema.$id) : Object.keys(external)
    const others = Object.fromEntries(candidates.map((id) => [id, external[id]!]))
    const ids = reachableSchemas(schema, others) ?? candidates.sort()
    const key = [optionsText, JSON.stringify(schema), ...ids.map((id) => `${id}\n${textOf(id)}`)].join('\n\n')
    let serialize = compiled.get(key)
    if (serialize === undefined) {
      const reached = Object.fromEntries(ids.map((id) => [id, others[id]!])) as unknown as Options['schema']
      serialize = fastJsonStringify(schema as AnySchema, { ...options, schema: reached }) as Serialize
      compiled.set(key, serialize)
    }
    return serialize
  }
}
