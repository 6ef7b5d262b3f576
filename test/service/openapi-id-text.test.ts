import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { ID_PATTERN } from '../../src/http/schemas.js'
import { buildTestApp } from '../helper.js'

// The id of a path or query parameter is matched by a long pattern (an exact 64-bit decimal);
// the document writes it once, as a named schema every such parameter references.

test('the id pattern is written once in the document, and every id parameter references it', async () => {
  const t = await buildTestApp()
  after(t.close)
  const doc = t.app.swagger() as { paths: Record<string, Record<string, { parameters?: Array<{ name: string, schema: { $ref?: string } }> }>>, components: { schemas: Record<string, { pattern?: string }> } }
  const text = JSON.stringify(doc)
  assert.equal(text.split(JSON.stringify(ID_PATTERN)).length - 1, 1)
  assert.equal(doc.components.schemas.IdText?.pattern, ID_PATTERN)
  const referencing = Object.values(doc.paths).flatMap((methods) => Object.values(methods))
    .flatMap((operation) => operation.parameters ?? [])
    .filter((parameter) => parameter.schema?.$ref === '#/components/schemas/IdText')
    .map((parameter) => parameter.name)
  assert.deepEqual([...new Set(referencing)].sort(), ['authorId', 'deliveryId', 'fileId', 'id', 'imageId', 'productId'])
  assert.ok(referencing.length >= 28, String(referencing.length))
})
