import assert from 'node:assert/strict'
import { EventEmitter, once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { logWhenWritten } from '../../src/service/log-written.js'

// pino writes a fatal line synchronously, and everything queued when the process exits, without
// waiting for the asynchronous write in flight: the fatal line could land before lines logged
// earlier. logWhenWritten logs it once nothing is in flight. A 4 MiB line keeps a write in
// flight long enough for the race to show on most tries without it.

const TRIES = 20

describe('the fatal line lands after every earlier line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-log-written-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  test(`with a 4 MiB line still being written: ${TRIES} tries, the fatal line last in each, then the exit's flush`, async () => {
    for (let i = 0; i < TRIES; i++) {
      const file = join(dir, `try-${i}.log`)
      const destination = pino.destination({ dest: file, sync: false })
      await once(destination, 'ready')
      const logger = pino(destination)
      logger.info('x'.repeat(4 << 20))
      await logWhenWritten(logger as FastifyBaseLogger, () => { logger.fatal('the last line') })
      // What pino does when the process exits.
      destination.flushSync()
      destination.end()
      await once(destination, 'close')
      const lines = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '')
      assert.equal(lines.length, 2, `try ${i}: both lines, whole`)
      assert.equal(lines[0]!.length > 4 << 20, true, `try ${i}: the long line first`)
      assert.match(lines[1]!, /"level":60.*"msg":"the last line"/, `try ${i}`)
    }
  })

  test('nothing in flight: the line is logged at once', async () => {
    const file = join(dir, 'idle.log')
    const destination = pino.destination({ dest: file, sync: false })
    await once(destination, 'ready')
    const logger = pino(destination)
    let logged = false
    const done = logWhenWritten(logger as FastifyBaseLogger, () => { logged = true })
    assert.equal(logged, true)
    await done
    destination.end()
    await once(destination, 'close')
  })

  test('a destination that never drains: the line is logged after a second', async () => {
    // A write in flight that never finishes.
    const stuck = Object.assign(new EventEmitter(), { _writing: true, write: () => true })
    const logger = pino({}, stuck)
    const started = performance.now()
    let logged = false
    await logWhenWritten(logger as FastifyBaseLogger, () => { logged = true })
    const waited = performance.now() - started
    assert.equal(logged, true)
    assert.ok(waited >= 990 && waited < 3000, `waited ${waited.toFixed(0)} ms`)
  })
})
