import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Fastify, { type FastifyReply } from 'fastify'
import fastJsonStringify from 'fast-json-stringify'
import { reachableSchemas, sharedSerializers } from '../../src/pipeline/serializers.js'
import { componentSchemas } from '../../src/service/components.js'

// Response serializers are built once per distinct schema and process, each from only the named
// schemas its schema reaches (src/pipeline/serializers.ts). What they write must be what Fastify's
// own compiler, which hands every build every named schema, would have written.

type Schema = Record<string, any>
// The app's named schemas as Fastify holds them (a JSON copy each).
const named: Record<string, Schema> = Object.fromEntries(componentSchemas.map((schema) => [schema.$id!, JSON.parse(JSON.stringify(schema))]))

/** fast-json-stringify's generated code, with its process-wide counters (names of merged and anonymous roots) taken out. */
function code (schema: Schema, external: Record<string, Schema>): string {
  const built = fastJsonStringify(schema, { schema: external as never, mode: 'debug' }) as unknown as { code: string }
  return built.code.replace(/__fjs_(root|merged)_\d+/g, '__fjs_$1')
}

function only (ids: string[]): Record<string, Schema> {
  return Object.fromEntries(ids.map((id) => [id, named[id]!]))
}

describe('response serializers', () => {
  test('every named representation, referenced alone, in a list or in an allOf, compiles to the same code from the schemas it reaches as from all of them', () => {
    // Request bodies (…Request) are read, never written.
    for (const id of Object.keys(named).filter((id) => !id.endsWith('Request'))) {
      const roots: Schema[] = [
        { $ref: id },
        { type: 'object', properties: { items: { type: 'array', items: { $ref: id } } }, required: ['items'] }
      ]
      if (named[id]!.type === 'object') roots.push({ allOf: [{ $ref: id }, { type: 'object', properties: { extra: { type: 'string' } } }] })
      for (const root of roots) {
        const ids = reachableSchemas(root, named)
        assert.ok(ids !== undefined && ids.includes(id), `${id}: reached`)
        assert.equal(code(root, only(ids)), code(root, named), `${JSON.stringify(root)}`)
      }
    }
  })

  test('each named schema\'s documented examples are written byte for byte as Fastify\'s own compiler writes them', () => {
    const compile = sharedSerializers(named)
    let examples = 0
    for (const [id, schema] of Object.entries(named).filter(([id]) => !id.endsWith('Request'))) {
      const ours = compile({ schema: { $ref: id } })
      const theirs = fastJsonStringify({ $ref: id }, { schema: named as never })
      for (const example of schema.examples ?? []) {
        assert.equal(ours(example), theirs(example), `${id}: ${JSON.stringify(example)}`)
        examples += 1
      }
    }
    assert.ok(examples >= 20, `${examples} examples`)
  })

  test('a reference to a part of a named schema reaches that schema and what it references', () => {
    assert.deepEqual(reachableSchemas({ $ref: 'ValidationProblem#/properties/errors' }, named), reachableSchemas({ $ref: 'ValidationProblem' }, named))
    assert.deepEqual(reachableSchemas({ type: 'object', properties: { a: { $ref: '#/properties/b' }, b: { type: 'string' } } }, named), [])
  })

  test('a reference no named schema answers (an $id nested in another) gets every named schema, as Fastify gives it', () => {
    const nested = { Outer: { $id: 'Outer', type: 'object', properties: { inner: { $id: 'Inner', type: 'object', properties: { n: { type: 'integer' } } } } } }
    assert.equal(reachableSchemas({ $ref: 'Inner' }, nested), undefined)
    const serialize = sharedSerializers(nested)({ schema: { $ref: 'Inner' } })
    assert.equal(serialize({ n: 7, hidden: true }), '{"n":7}')
  })

  test('two apps with the same schemas use one serializer per schema; a different definition gets its own', async (t) => {
    async function serializerOf (definition: Schema): Promise<(value: unknown) => string> {
      const app = Fastify({ logger: false, schemaController: { compilersFactory: { buildSerializer: sharedSerializers } } })
      t.after(async () => { await app.close() })
      app.addSchema({ $id: 'Thing', ...definition })
      let serialize: ((value: unknown) => string) | undefined
      app.get('/thing', { schema: { response: { 200: { $ref: 'Thing' } } } }, async (_request, reply: FastifyReply) => {
        serialize = reply.getSerializationFunction('200') as (value: unknown) => string
        return { name: 'a', secret: 's' }
      })
      const res = await app.inject({ method: 'GET', url: '/thing' })
      assert.equal(res.statusCode, 200)
      assert.ok(serialize !== undefined)
      return serialize
    }
    const withName = { type: 'object', properties: { name: { type: 'string' } } }
    const first = await serializerOf(withName)
    const second = await serializerOf(withName)
    assert.equal(first, second)
    assert.equal(first({ name: 'a', secret: 's' }), '{"name":"a"}')
    const other = await serializerOf({ type: 'object', properties: { name: { type: 'string' }, secret: { type: 'string' } } })
    assert.notEqual(other, first)
    assert.equal(other({ name: 'a', secret: 's' }), '{"name":"a","secret":"s"}')
  })
})
