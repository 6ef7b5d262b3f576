import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'

const { app, close } = await buildTestApp()
after(close)

describe('declared charset of a JSON body', () => {
  for (const charset of ['utf-16', 'UTF-16LE', 'iso-8859-1', '"latin1"']) {
    test(`charset=${charset} is 415 UNSUPPORTED_MEDIA_TYPE`, async () => {
      const res = await app.inject({
        method: 'POST', url: '/v1/users', headers: { 'content-type': `application/json; charset=${charset}` }, payload: '{}'
      })
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
    })
  }

  for (const charset of ['utf-8', 'UTF-8', '"utf-8"', 'utf8']) {
    test(`charset=${charset} is read as JSON`, async () => {
      const res = await app.inject({
        method: 'POST', url: '/v1/users', headers: { 'content-type': `application/json; charset=${charset}` },
        payload: JSON.stringify({ email: uniqueEmail(), password: 'correct horse', name: 'Ünïcödé' })
      })
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().name, 'Ünïcödé')
    })
  }
})
