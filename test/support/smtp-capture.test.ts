import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import nodemailer from 'nodemailer'
import { SmtpCapture, linkIn, tokenIn } from './smtp-capture.js'
import { waitFor } from '../helper.js'

// The capture server itself, driven by the same client the service uses.

let capture: SmtpCapture
before(async () => { capture = await SmtpCapture.start() })
after(async () => { await capture.stop() })

// A new transport for every send: no pooled connection outlives a stop() or a restart().
const transport = (url: string) => nodemailer.createTransport(url)

let serial = 0
const send = async (url: string, subject = `hello ${++serial}`) => await transport(url).sendMail({
  from: '"Resource API" <no-reply@example.com>',
  to: 'Ann.Smith@Example.com',
  subject,
  text: `Hi Ann,\n\nhttp://localhost:3000/verify?token=tok-${serial}&x=1\n`,
  html: `<p>Hi Ann, <a href="http://localhost:3000/verify?token=tok-${serial}&amp;x=1">verify</a></p>`
})

describe('SmtpCapture', () => {
  test('captures a mail sent with nodemailer: envelope, headers, both parts, credentials', { timeout: 30_000 }, async () => {
    assert.match(capture.url, /^smtp:\/\/mailer:secret@127\.0\.0\.1:\d+$/)
    assert.ok(capture.port > 0)
    const info = await send(capture.url, 'a captured mail')
    const mail = await capture.waitFor((m) => m.subject === 'a captured mail')
    assert.deepEqual(mail.to, ['ann.smith@example.com'])
    assert.match(mail.from, /no-reply@example\.com/)
    assert.equal(mail.envelopeFrom, 'no-reply@example.com')
    assert.match(mail.text, /^Hi Ann,/)
    assert.match(mail.html, /<a href="http:\/\/localhost:3000\/verify\?token=tok-\d+&amp;x=1">/)
    assert.equal(mail.messageId, info.messageId)
    assert.ok(mail.date instanceof Date)
    assert.equal(mail.headers.get('subject'), 'a captured mail')
    assert.match(mail.raw, /^Subject: a captured mail\r?$/m)
    assert.deepEqual(mail.auth, { username: 'mailer', password: 'secret' })
    assert.ok(mail.receivedAt > 0)
    assert.equal(linkIn(mail).pathname, '/verify')
    assert.match(tokenIn(mail), /^tok-\d+$/)
  })

  test('waitFor resolves with a mail that arrives later; waitForCount counts', { timeout: 30_000 }, async () => {
    const before = capture.mails.length
    const waiting = capture.waitFor((m) => m.subject === 'arrives later')
    await send(capture.url, 'arrives later')
    assert.equal((await waiting).subject, 'arrives later')
    const mails = await capture.waitForCount(before + 1)
    assert.equal(mails.length, before + 1)
  })

  test('waitFor times out with the captured subjects and recipients', { timeout: 30_000 }, async () => {
    await send(capture.url, 'already here')
    await assert.rejects(capture.waitFor((m) => m.subject === 'never sent', 200), (err: Error) => {
      assert.match(err.message, /"already here" to ann\.smith@example\.com/)
      return true
    })
    await assert.rejects(capture.waitForCount(capture.mails.length + 5, 200), /expected \d+ mails/)
  })

  test('a wrong password is refused with 535', { timeout: 30_000 }, async () => {
    const count = capture.mails.length
    const wrong = capture.url.replace(':secret@', ':wrong@')
    await assert.rejects(send(wrong, 'with a wrong password'), (err: Error & { responseCode?: number }) => {
      assert.equal(err.responseCode, 535)
      return true
    })
    assert.equal(capture.mails.length, count)
  })

  test('sending without credentials is refused', { timeout: 30_000 }, async () => {
    const anonymous = capture.url.replace('mailer:secret@', '')
    await assert.rejects(send(anonymous, 'anonymous'))
    assert.ok(!capture.mails.some((m) => m.subject === 'anonymous'))
  })

  test('stopped, connections are refused; restarted, it takes mail again on the same port', { timeout: 30_000 }, async () => {
    const port = capture.port
    await capture.stop()
    await assert.rejects(send(capture.url, 'while down'), (err: Error & { code?: string }) => {
      assert.ok(err.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(err.message), `${err.code}: ${err.message}`)
      return true
    })
    await capture.restart()
    assert.equal(capture.port, port)
    await send(capture.url, 'after the restart')
    await capture.waitFor((m) => m.subject === 'after the restart')
    assert.ok(capture.mails.some((m) => m.subject === 'a captured mail'), 'earlier mails are kept')
  })

  test('stop() cuts off a client mid-transaction: the mail fails and is not captured', { timeout: 30_000 }, async () => {
    capture.delayMs = 20_000
    const sending = send(capture.url, 'cut off')
    const settled = sending.then(() => 'sent', () => 'failed')
    // Wait until the DATA is in and the answer is being held back.
    await waitFor('the mail is held', async () => capture.holding === 1, 10_000)
    await capture.stop()
    assert.equal(await settled, 'failed')
    assert.ok(!capture.mails.some((m) => m.subject === 'cut off'))
    capture.delayMs = 0
    await capture.restart()
  })

  test('delayMs holds back the answer to each mail', { timeout: 30_000 }, async () => {
    capture.delayMs = 600
    try {
      const started = performance.now()
      await send(capture.url, 'slowly')
      assert.ok(performance.now() - started >= 600, 'answered before the delay')
      await capture.waitFor((m) => m.subject === 'slowly', 0)
    } finally {
      capture.delayMs = 0
    }
  })

  test('a capture without credentials takes mail without AUTH', { timeout: 30_000 }, async () => {
    const open = await SmtpCapture.start({ user: '', password: '' })
    try {
      assert.match(open.url, /^smtp:\/\/127\.0\.0\.1:\d+$/)
      await send(open.url, 'no auth')
      const mail = await open.waitFor((m) => m.subject === 'no auth')
      assert.equal(mail.auth, undefined)
    } finally {
      await open.stop()
    }
  })

  test('linkIn prefers a link on a line of its own; tokenIn throws without a token', { timeout: 30_000 }, () => {
    const base = capture.mails[0]!
    const mail = { ...base, text: 'Hello http://evil.example/?token=forged,\n\n  https://site.example/reset?token=real  \n' }
    assert.equal(tokenIn(mail), 'real')
    assert.throws(() => tokenIn({ ...base, text: 'see https://site.example/plain\n' }), /no token/)
    assert.throws(() => linkIn({ ...base, text: 'no link here' }), /no link/)
  })
})
