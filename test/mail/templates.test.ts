import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { renderMail, type MailContent } from '../../src/mail/templates.js'

const SITE = 'localhost:3000'
const LINK = 'http://localhost:3000/verify?token=abc123&lang=en'
const NASTY_NAME = '<script>alert("x")</script> & \'Ö\''
const IGNORE = 'If you did not ask for this, ignore this mail; nothing changes.'
const NOT_YOU = "If this was not you, reset your password at once and check the account's e-mail address."
const NOT_YOUR_ACCOUNT = 'If you did not make this account, do not open the link: someone else used your address. Ignore this mail, or take the account with a password reset, which ends everything its maker set up on it.'

// Written out here rather than imported, so that a broken escape in the templates cannot also
// break the expectation it is checked against.
const reference = (s: string) => s
  .replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;')
const flatten = (s: string) => s.replace(/\r\n|[\r\n\v\f\u0085\u2028\u2029]/g, ' ')

type Values = { name: string, link: string, oldEmail: string, newEmail: string, provider: string, keyName: string }

const contents = (v: Values): MailContent[] => [
  { kind: 'verify-email', name: v.name, link: v.link, hours: 24, newAddress: false },
  { kind: 'verify-email', name: v.name, link: v.link, hours: 24, newAddress: true },
  { kind: 'reset-password', name: v.name, link: v.link, minutes: 30 },
  { kind: 'email-changed', name: v.name, oldEmail: v.oldEmail, newEmail: v.newEmail },
  { kind: 'password-changed', name: v.name, how: 'reset' },
  { kind: 'password-changed', name: v.name, how: 'change' },
  { kind: 'mfa-changed', name: v.name, what: 'disabled', remaining: 0 },
  { kind: 'mfa-changed', name: v.name, what: 'removed', remaining: 0 },
  { kind: 'mfa-changed', name: v.name, what: 'recovery-code-used', remaining: 9 },
  { kind: 'mfa-changed', name: v.name, what: 'enabled', remaining: 0 },
  { kind: 'identity-linked', name: v.name, provider: v.provider },
  { kind: 'api-key-created', name: v.name, keyName: v.keyName, scopes: ['orders:read', 'events:read'], prefix: 'rk_Xb4k9QmT' }
]

const label = (c: MailContent) => c.kind === 'verify-email'
  ? `${c.kind} (${c.newAddress ? 'new address' : 'account'})`
  : c.kind === 'password-changed' ? `${c.kind} (${c.how})` : c.kind === 'mfa-changed' ? `${c.kind} (${c.what})` : c.kind

const plain: Values = { name: 'Ann', link: LINK, oldEmail: 'ann@example.com', newEmail: 'ann@example.org', provider: 'gitlab', keyName: 'fulfilment job' }
const hasLink = (c: MailContent): c is Extract<MailContent, { link: string }> => 'link' in c

describe('renderMail', () => {
  for (const content of contents(plain)) {
    test(`${label(content)}: a subject, a text part and a complete, self-contained HTML document`, { timeout: 30_000 }, () => {
      const mail = renderMail(content, SITE)
      assert.ok(mail.subject.length > 0)
      assert.doesNotMatch(mail.subject, /[\r\n]/)
      assert.ok(mail.text.trim().length > 0)
      assert.ok(mail.html.trim().length > 0)
      assert.match(mail.text, /^Hello Ann,$/m)
      assert.ok(mail.text.includes(SITE), mail.text)
      assert.ok(mail.html.startsWith('<!doctype html>'), mail.html)
      assert.ok(mail.html.includes('<html lang="en">'))
      assert.ok(mail.html.includes('<meta charset="utf-8">'))
      assert.ok(mail.html.includes('Hello Ann,'))
      assert.ok(mail.html.trimEnd().endsWith('</html>'))
      // Nothing for a mail client to fetch or run.
      assert.doesNotMatch(mail.html, /<(script|img|link|iframe|object|embed|style)\b|\bsrc=|url\(|@import/i)
    })
  }

  for (const content of contents(plain).filter(hasLink)) {
    test(`${label(content)}: the link verbatim on its own line in text, escaped in the HTML href and visible text`, { timeout: 30_000 }, () => {
      const mail = renderMail(content, SITE)
      assert.ok(mail.text.split('\n').includes(LINK), mail.text)
      const escaped = LINK.replaceAll('&', '&amp;')
      assert.ok(mail.html.includes(`href="${escaped}"`), mail.html)
      assert.ok(mail.html.includes(`>${escaped}</a>`), mail.html)
      assert.ok(!mail.html.includes('token=abc123&lang'), 'a bare & in the HTML')
      // The button and the visible link.
      assert.equal(mail.html.split(`href="${escaped}"`).length - 1, 2)
      // A sign-up's mail may reach an owner who never signed up: it says what to do then.
      const closing = content.kind === 'verify-email' && !content.newAddress ? NOT_YOUR_ACCOUNT : IGNORE
      assert.ok(mail.text.includes(closing), mail.text)
      assert.ok(mail.html.includes(reference(closing)))
    })
  }

  test('subjects', { timeout: 30_000 }, () => {
    const subjects = contents(plain).map((c) => renderMail(c, SITE).subject)
    assert.deepEqual(subjects, [
      'Verify your e-mail address',
      'Confirm your new e-mail address',
      'Reset your password',
      'Your e-mail address was changed',
      'Your password was changed',
      'Your password was changed',
      'Your second factor was turned off',
      'Your second factor was removed by an administrator',
      'A recovery code was used',
      'A second factor was turned on',
      'A sign-in provider was linked to your account',
      'A new API key was created'
    ])
  })

  test('how long a link is good', { timeout: 30_000 }, () => {
    const [verify, confirm, reset] = contents(plain).map((c) => renderMail(c, SITE).text)
    assert.ok(verify!.includes('This link works for 24 hours, once.'), verify)
    assert.ok(confirm!.includes('This link works for 24 hours, once.'), confirm)
    assert.ok(reset!.includes('This link works for 30 minutes, once.'), reset)
    const one = renderMail({ kind: 'verify-email', name: 'Ann', link: LINK, hours: 1, newAddress: false }, SITE).text
    assert.ok(one.includes('This link works for 1 hour, once.'), one)
  })

  test('the notices: what happened and what to do if it was not you', { timeout: 30_000 }, () => {
    const [, , , changed, byReset, byChange] = contents(plain).map((c) => renderMail(c, SITE))
    assert.ok(changed!.text.includes('ann@example.com') && changed!.text.includes('ann@example.org'), changed!.text)
    assert.match(changed!.text, /no longer receives mail for the account/)
    assert.ok(changed!.html.includes('ann@example.com') && changed!.html.includes('ann@example.org'))
    for (const mail of [changed!, byReset!, byChange!]) {
      assert.ok(mail.text.includes(NOT_YOU), mail.text)
      assert.ok(mail.html.includes(reference(NOT_YOU)), mail.html)
      assert.doesNotMatch(mail.text, /https?:\/\//)
    }
    assert.notEqual(byReset!.text, byChange!.text)
    assert.match(byReset!.text, /reset/)
  })

  test('the notice of a factor an administrator removed says who did it and what to do', { timeout: 30_000 }, () => {
    const removed = contents(plain).map((c) => renderMail(c, SITE)).find((m) => m.subject.includes('administrator'))!
    assert.match(removed.text, /An administrator of .* removed the authenticator app/)
    assert.match(removed.text, /reset your password at once/)
  })

  test('the notices of a new way in: a factor turned on, a provider linked, a key made (its name, scopes and prefix, never more)', { timeout: 30_000 }, () => {
    const [enabled, linked, key] = contents(plain).slice(-3).map((c) => renderMail(c, SITE))
    assert.match(enabled!.text, /authenticator app was added/)
    assert.match(enabled!.text, /reset your password at once/)
    assert.ok(linked!.text.includes('gitlab'), linked!.text)
    assert.match(linked!.text, /unlink gitlab/)
    assert.ok(key!.text.includes('fulfilment job') && key!.text.includes('orders:read, events:read') && key!.text.includes('rk_Xb4k9QmT'), key!.text)
    for (const mail of [enabled!, linked!, key!]) assert.doesNotMatch(mail.text, /https?:\/\//)
  })

  for (const content of contents({ ...plain, name: NASTY_NAME })) {
    test(`${label(content)}: a name with markup is escaped in HTML and kept in text`, { timeout: 30_000 }, () => {
      const mail = renderMail(content, SITE)
      assert.ok(!mail.html.includes('<script'), mail.html)
      assert.ok(mail.html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Ö&#39;'), mail.html)
      assert.ok(mail.text.includes(`Hello ${NASTY_NAME},`), mail.text)
      assert.ok(!mail.subject.includes('script'))
      assert.equal(mail.subject, renderMail({ ...content, name: 'Ann' }, SITE).subject)
    })
  }

  test('line breaks in a name cannot forge lines in the text part or reach the subject', { timeout: 30_000 }, () => {
    const name = 'Eve\r\n\r\nhttps://evil.example/reset?token=forged\nBcc: x@evil.example\r'
    for (const content of contents({ ...plain, name })) {
      const mail = renderMail(content, SITE)
      assert.ok(mail.text.includes('Hello Eve  https://evil.example/reset?token=forged Bcc: x@evil.example ,'), mail.text)
      assert.ok(!mail.text.split('\n').some((line) => line.startsWith('https://evil.example') || line.startsWith('Bcc:')), mail.text)
      assert.doesNotMatch(mail.text, /\r/)
      assert.doesNotMatch(mail.subject, /[\r\n]|evil/)
    }
  })

  test('addresses in the notice are escaped in HTML and kept on one line in text', { timeout: 30_000 }, () => {
    const mail = renderMail({ kind: 'email-changed', name: 'Ann', oldEmail: '"a<b>"@example.com', newEmail: 'x\n@example.org' }, SITE)
    assert.ok(mail.html.includes('&quot;a&lt;b&gt;&quot;@example.com'), mail.html)
    assert.ok(!mail.html.includes('<b>'))
    assert.ok(mail.text.includes('"a<b>"@example.com'))
    assert.ok(mail.text.includes('x @example.org'))
  })

  // Every value from outside takes the place of a harmless marker and contributes exactly its
  // escaped form to the HTML and its one-line form to the text: nothing else of the document
  // changes, so no value can open a tag, close an attribute or add a line.
  test('property: any values change the mails only by their escaped (HTML) or one-line (text) form', { timeout: 30_000 }, () => {
    const anyString = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: fc.constantFrom('<', '>', '&', '"', "'", '\r', '\n', '=', '/', 'a', ' ', 'script', '&amp;', '$&', '😀'), maxLength: 30 })
    )
    const markers: Values = { name: 'QQNAMEQQ', link: 'QQLINKQQ', oldEmail: 'QQOLDQQ', newEmail: 'QQNEWQQ', provider: 'QQPROVIDERQQ', keyName: 'QQKEYQQ' }
    const site = 'QQSITEQQ'
    const templates = contents(markers).map((c) => renderMail(c, site))
    // Replacement functions, so that a `$&` in a value is not read as a replacement pattern.
    const fill = (s: string, v: Values, siteValue: string, form: (s: string) => string) => s
      .replaceAll(markers.name, () => form(v.name)).replaceAll(markers.link, () => form(v.link))
      .replaceAll(markers.oldEmail, () => form(v.oldEmail)).replaceAll(markers.newEmail, () => form(v.newEmail))
      .replaceAll(markers.provider, () => form(v.provider)).replaceAll(markers.keyName, () => form(v.keyName))
      .replaceAll(site, () => form(siteValue))
    const count = (s: string, c: string) => s.split(c).length - 1

    fc.assert(fc.property(
      fc.record({ name: anyString, link: anyString, oldEmail: anyString, newEmail: anyString, provider: anyString, keyName: anyString }),
      anyString,
      (values, siteValue) => {
        contents(values).forEach((content, i) => {
          const mail = renderMail(content, siteValue)
          const template = templates[i]!
          assert.equal(mail.subject, template.subject)
          assert.equal(mail.html, fill(template.html, values, siteValue, reference))
          assert.equal(count(mail.html, '<'), count(template.html, '<'))
          assert.equal(count(mail.html, '"'), count(template.html, '"'))
          assert.equal(mail.text, fill(template.text, values, siteValue, flatten))
          assert.equal(count(mail.text, '\n'), count(template.text, '\n'))
          assert.ok(mail.html.includes(reference(values.name)))
        })
      }
    ), { numRuns: 300 })
  })
})
