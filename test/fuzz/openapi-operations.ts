// The operations of the OpenAPI document, as the fuzzer walks them: every path and method, with
// every `$ref` replaced by the schema it names, so the rest of the fuzzer never sees a reference
// (the document may write a schema inline or as a named component; both read the same here).

import { withoutAllOf } from './schema-arbitrary.js'

export type Schema = Record<string, any>

export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required: boolean
  schema: Schema
}

export interface Operation {
  /** `GET /v1/posts/{id}` */
  key: string
  method: string
  path: string
  parameters: Parameter[]
  /** The request body: its schema per media type, and whether it is required. */
  body: { required: boolean, media: Record<string, Schema> } | undefined
  /** True when the document says the operation needs a bearer token. */
  secured: boolean
  /** Documented responses by status: the schema per media type (empty for no content). */
  responses: Record<string, { media: Record<string, Schema>, headers: Record<string, Schema> }>
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']

function pointer (doc: Schema, ref: string): Schema {
  const target = ref.slice(2).split('/').map((s) => decodeURIComponent(s).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<any>((node, segment) => node?.[segment], doc)
  if (target === undefined) throw new Error(`unresolvable $ref ${ref}`)
  return target
}

/** The component a reference names: a JSON pointer, or a schema's `$id` (TypeBox style). */
function lookup (doc: Schema, ref: string): Schema {
  if (ref.startsWith('#/')) return pointer(doc, ref)
  const id = ref.replace(/#$/, '')
  const schemas: Record<string, Schema> = doc.components?.schemas ?? {}
  const found = Object.entries(schemas).find(([name, schema]) => schema.$id === id || name === id)
  if (found === undefined) throw new Error(`unresolvable $ref ${ref}`)
  return found[1]
}

/**
 * A copy of `node` with every `$ref` inlined (members beside a `$ref`, such as a description,
 * are kept). `$id`s are dropped: once inlined, the same id would appear in several places.
 * A cycle is reported, not followed for ever: this API has no recursive schemas.
 */
export function resolveRefs (doc: Schema, node: unknown, seen: string[] = []): any {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(doc, item, seen))
  if (node === null || typeof node !== 'object') return node
  const object = node as Schema
  if (typeof object.$ref === 'string') {
    const ref = object.$ref
    if (seen.includes(ref)) throw new Error(`recursive $ref ${[...seen, ref].join(' -> ')}`)
    const siblings = { ...object }
    delete siblings.$ref
    const target = resolveRefs(doc, lookup(doc, ref), [...seen, ref])
    return { ...target, ...resolveRefs(doc, siblings, seen) }
  }
  const copy: Schema = {}
  for (const [key, value] of Object.entries(object)) {
    if (key === '$id') continue
    copy[key] = resolveRefs(doc, value, seen)
  }
  return copy
}

/** Every operation of the document, with its references resolved. */
export function operationsOf (doc: Schema): Operation[] {
  const operations: Operation[] = []
  for (const [path, rawItem] of Object.entries<Schema>(doc.paths ?? {})) {
    const item = resolveRefs(doc, rawItem)
    for (const method of METHODS) {
      const op = item[method] as Schema | undefined
      if (op === undefined) continue
      const parameters: Parameter[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Schema) => ({
        name: p.name, in: p.in, required: p.required === true, schema: p.schema ?? {}
      }))
      const body = op.requestBody === undefined
        ? undefined
        : {
            required: op.requestBody.required === true,
            media: Object.fromEntries(Object.entries<Schema>(op.requestBody.content ?? {}).map(([type, m]) => [type, m.schema ?? {}]))
          }
      const security = op.security ?? doc.security ?? []
      const responses: Operation['responses'] = {}
      for (const [status, response] of Object.entries<Schema>(op.responses ?? {})) {
        responses[status] = {
          media: Object.fromEntries(Object.entries<Schema>(response.content ?? {}).map(([type, m]) => [type, m.schema ?? {}])),
          headers: Object.fromEntries(Object.entries<Schema>(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), h.schema ?? {}]))
        }
      }
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        parameters,
        body,
        secured: security.some((requirement: Schema) => Object.keys(requirement).length > 0),
        responses
      })
    }
  }
  return operations
}

/** The error codes the document lists for one status of an operation (from the `code` enum). */
export function documentedCodes (op: Operation, status: number): string[] {
  const codes = new Set<string>()
  for (const schema of Object.values(op.responses[String(status)]?.media ?? {})) {
    for (const code of withoutAllOf(schema).properties?.code?.enum ?? []) codes.add(code)
  }
  return [...codes]
}

/** The JSON body schema of an operation (application/json), if it takes one. */
export function jsonBodySchema (op: Operation): Schema | undefined {
  return op.body?.media['application/json']
}

/** Every error code the document names, over all operations. */
export function allCodes (operations: Operation[]): string[] {
  const codes = new Set<string>()
  for (const op of operations) for (const status of Object.keys(op.responses)) for (const code of documentedCodes(op, Number(status))) codes.add(code)
  return [...codes].sort()
}
