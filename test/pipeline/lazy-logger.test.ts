import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, test } from 'node:test'
import Fastify from 'fastify'
import { lazyChildLogger } from '../../src/pipeline/lazy-logger.js'

// request.log is pino's child bound to the request id, made only when a line is logged through
// it: a request that logs nothing makes no child; one that logs gets lines exactly as pino's
// own child would write them (the request id, the level, the message, a child's own bindings),
// and levels below the logger's are dropped without making one.

const lines: Array<Record<string, unknown>> = []
const stream = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(...chunk.toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)); done() } })
const app = Fastify({ logger: { level: 'info', stream }, disableRequestLogging: true, childLoggerFactory: lazyChildLogger })
app.get('/silent', async (request) => {
  request.log.debug('below the level')
  const log = request.log as typeof request.log & { isLevelEnabled: (level: string) => boolean }
  return { level: log.level, info: log.isLevelEnabled('info'), debug: log.isLevelEnabled('debug') }
})
app.get('/loud', async (request) => {
  request.log.warn({ detail: 1 }, 'a warning')
  request.log.child({ part: 'inner' }).info('from a child')
  return {}
})
await app.ready()
after(async () => { await app.close() })

/** Children made for a request (bound to its id). */
let children = 0
const child = app.log.child
app.log.child = function (this: typeof app.log, ...args: Parameters<typeof child>) {
  if ('reqId' in args[0]) children += 1
  return child.apply(this, args)
} as typeof child

test('a request that logs nothing makes no child logger, and sees the logger\'s level', async () => {
  children = 0
  lines.length = 0
  const res = await app.inject({ method: 'GET', url: '/silent' })
  assert.deepEqual(res.json(), { level: 'info', info: true, debug: false })
  assert.equal(children, 0)
  assert.deepEqual(lines, [])
})

test('a request that logs writes pino\'s lines, bound to its request id', async () => {
  children = 0
  lines.length = 0
  const res = await app.inject({ method: 'GET', url: '/loud' })
  assert.equal(res.statusCode, 200)
  assert.equal(children, 1)
  const [warning, inner] = lines
  assert.equal(lines.length, 2)
  assert.equal(warning!.level, 40)
  assert.equal(warning!.msg, 'a warning')
  assert.equal(warning!.detail, 1)
  assert.equal(typeof warning!.reqId, 'string')
  assert.equal(inner!.msg, 'from a child')
  assert.equal(inner!.part, 'inner')
  assert.equal(inner!.reqId, warning!.reqId)
})
