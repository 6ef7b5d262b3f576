import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp } from '../helper.js'

// The OpenAPI document is generated from the route schemas; for posts it must list, per
// operation, the statuses and codes a client has to handle, and the security of writes.

const { app, close } = await buildTestApp()
after(close)

const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
const op = (path: string, method: string) => spec.paths[path][method]
// A response shared by several operations is a reference to components.responses; an error body
// is the named Problem narrowed to the codes of that status (or ValidationProblem).
const resolve = (node: any): any => typeof node.$ref === 'string' ? spec.components[node.$ref.split('/')[2]][node.$ref.split('/')[3]] : node
const codesAt = (operation: any, status: string): string[] => {
  const schema = resolve(operation.responses[status]).content['application/json'].schema
  if (schema.$ref === '#/components/schemas/ValidationProblem') return ['VALIDATION_ERROR']
  return [...schema.allOf[1].properties.code.enum].sort()
}

const EXPECTED: Array<[string, string, string[], boolean]> = [
  ['/v1/posts', 'get', ['200', '400', '429', '500', '503'], false],
  ['/v1/posts', 'post', ['201', '400', '401', '403', '413', '415', '429', '500', '503'], true],
  ['/v1/posts/{id}', 'get', ['200', '304', '400', '404', '429', '500', '503'], false],
  ['/v1/posts/{id}', 'put', ['200', '400', '401', '403', '404', '412', '413', '415', '429', '500', '503'], true],
  ['/v1/posts/{id}', 'patch', ['200', '400', '401', '403', '404', '412', '413', '415', '429', '500', '503'], true],
  ['/v1/posts/{id}', 'delete', ['204', '400', '401', '403', '404', '412', '429', '500', '503'], true],
  ['/v1/posts/{id}/views', 'post', ['200', '400', '404', '413', '415', '429', '500', '503'], false]
]

describe('posts in the OpenAPI document', () => {
  for (const [path, method, statuses, secured] of EXPECTED) {
    test(`${method.toUpperCase()} ${path}: tag, statuses, security`, () => {
      const operation = op(path, method)
      assert.deepEqual(operation.tags, ['posts'])
      assert.equal(typeof operation.summary, 'string')
      assert.deepEqual(Object.keys(operation.responses).sort(), statuses)
      // A log-in token, or an API key with posts:write.
      if (secured) assert.deepEqual(operation.security, [{ bearerAuth: [] }, { apiKey: ['posts:write'] }])
      else assert.deepEqual(operation.security, [])
    })
  }

  test('the error codes per status are the documented ones', () => {
    assert.deepEqual(codesAt(op('/v1/posts/{id}', 'patch'), '403'), ['FORBIDDEN_POST_ACCESS', 'INSUFFICIENT_SCOPE'])
    assert.deepEqual(codesAt(op('/v1/posts', 'post'), '403'), ['INSUFFICIENT_SCOPE'])
    assert.deepEqual(codesAt(op('/v1/posts/{id}', 'patch'), '404'), ['POST_NOT_FOUND'])
    assert.deepEqual(codesAt(op('/v1/posts/{id}', 'patch'), '412'), ['PRECONDITION_FAILED'])
    assert.deepEqual(codesAt(op('/v1/posts/{id}', 'patch'), '400'), ['MALFORMED_JSON', 'VALIDATION_ERROR'])
    assert.deepEqual(codesAt(op('/v1/posts', 'post'), '401'), ['AUTHENTICATION_REQUIRED'])
    assert.deepEqual(codesAt(op('/v1/posts', 'get'), '400'), ['CURSOR_MISMATCH', 'VALIDATION_ERROR'])
  })

  test('PATCH documents both media types; the list documents its paging, filters and sort', () => {
    assert.deepEqual(Object.keys(op('/v1/posts/{id}', 'patch').requestBody.content).sort(), ['application/json', 'application/merge-patch+json'].sort())
    const names = op('/v1/posts', 'get').parameters.map((p: { name: string }) => p.name).sort()
    assert.deepEqual(names, ['authorId', 'createdAfter', 'createdBefore', 'cursor', 'limit', 'q', 'sort'])
  })

  test('the post representation has exactly its eight members', () => {
    assert.deepEqual(op('/v1/posts/{id}', 'get').responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Post' })
    const schema = spec.components.schemas.Post
    assert.deepEqual(Object.keys(schema.properties).sort(), ['author', 'content', 'createdAt', 'id', 'images', 'title', 'updatedAt', 'views'])
    assert.deepEqual(schema.properties.author, { $ref: '#/components/schemas/Author' })
    assert.deepEqual(Object.keys(spec.components.schemas.Author.properties).sort(), ['id', 'name'])
  })
})
