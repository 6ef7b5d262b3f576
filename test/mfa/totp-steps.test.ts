import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { STEP_SECONDS, stepOf } from '../../src/mfa/totp.js'
import { totp } from '../support/rfc6238.js'

// The service's reading of a code against a fake clock: good in its own 30-second step and one
// either side, to the millisecond, and nowhere else; the step it answers is the code's own.

const secret = randomBytes(20)
const STEP_MS = STEP_SECONDS * 1000
const s = 59_000_000 // a step number well inside the 32-bit counter range
const codeOf = (step: number) => totp(secret, { time: step * STEP_SECONDS })

describe('stepOf: a code is read in its step and one either side', () => {
  test('at the edges of the window, to the millisecond', { timeout: 10_000 }, () => {
    const code = codeOf(s)
    // One step early (the phone is ahead): from the first millisecond of step s - 1.
    assert.equal(stepOf(secret, code, (s - 1) * STEP_MS), s)
    assert.equal(stepOf(secret, code, (s - 1) * STEP_MS - 1), undefined)
    // Its own step, first and last millisecond.
    assert.equal(stepOf(secret, code, s * STEP_MS), s)
    assert.equal(stepOf(secret, code, (s + 1) * STEP_MS - 1), s)
    // One step late: up to the last millisecond of step s + 1, not the first of s + 2.
    assert.equal(stepOf(secret, code, (s + 2) * STEP_MS - 1), s)
    assert.equal(stepOf(secret, code, (s + 2) * STEP_MS), undefined)
  })

  test('anything but six digits is no code', { timeout: 10_000 }, () => {
    const now = s * STEP_MS
    const code = codeOf(s)
    for (const text of ['', code.slice(1), `${code}0`, ` ${code}`, `${code.slice(0, 3)} ${code.slice(3)}`, code.replace(/\d$/, 'x'), '１２３４５６']) {
      assert.equal(stepOf(secret, text, now), undefined, JSON.stringify(text))
    }
  })

  test('another secret\'s code is refused (over many secrets, as often as chance allows)', { timeout: 10_000 }, () => {
    const now = s * STEP_MS
    let accepted = 0
    for (let i = 0; i < 2000; i++) if (stepOf(randomBytes(20), codeOf(s), now) !== undefined) accepted += 1
    // Three steps are tried, each a one-in-a-million match: expect 0 in 2,000 (6e-3 on average).
    assert.ok(accepted <= 1, String(accepted))
  })
})
