import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { base32Decode, totp } from '../support/rfc6238.js'
import { body, signUpAndLogIn } from './api-client.js'
import { startCluster, type ClusterProcess } from './cluster-process.js'
import { json } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// A second factor (TOTP) on three instances behind HAProxy (`npm run cluster`), on one
// PostgreSQL of this test's own, every instance with the same SECRET_KEY: a factor enrolled on
// one instance opens on the others, a challenge made on one is answered on another, and a code
// (or a recovery code) accepted by one instance is refused by the others, since the last used
// step is kept in the database. Of one code sent to every instance at once, each with a challenge
// of its own, one makes a session. An instance without SECRET_KEY answers 503 for the factor.
// Codes are computed here by an independent RFC 6238 implementation, for explicit steps: the
// activation uses the current step, the log-in the next one, so no test waits for a step to pass.

const haproxyMissing = (await new Promise<boolean>((resolve) => {
  const probe = spawn('haproxy', ['-v'], { stdio: 'ignore' })
  probe.once('error', () => { resolve(true) })
  probe.once('exit', () => { resolve(false) })
}))
const skip = skipWithoutPostgres !== false
  ? skipWithoutPostgres
  : haproxyMissing && process.env.CI === undefined ? 'haproxy is not on the PATH (apt-get install haproxy)' : false

const SECRET_KEY = '5e'.repeat(32)
const PASSWORD = 'a password for the second factor'

interface Session { token: string, user: { id: number, email: string } }
interface Problem { code: string, challenge?: string, expiresAt?: string }
interface Factor { id: number, email: string, secret: Buffer, recoveryCodes: string[], auth: Record<string, string>, activatedAt: number }

/** The 30-second step of now. */
const stepNow = (): number => Math.floor(Date.now() / 1000 / 30)
/** The code of a step. */
const codeOf = (secret: Buffer, step: number): string => totp(secret, { time: step * 30 })

describe('a second factor (TOTP) across 3 instances behind HAProxy', { skip, timeout: 180_000 }, () => {
  let pg: PrivatePostgres
  let cluster: ClusterProcess
  /** Each instance directly, in the order the cluster started them, and the balancer. */
  let instances: string[] = []
  let balancer: string
  const named = (base: string): string => base === balancer ? 'HAProxy' : `instance ${instances.indexOf(base) + 1}`
  let users = 0

  before(async () => {
    pg = await startPrivatePostgres()
    cluster = await startCluster({ DATABASE_URL: pg.url, SHUTDOWN_GRACE_MS: '1000', SECRET_KEY })
    balancer = cluster.base
    instances = [...cluster.output().matchAll(/instance \d+: pid \d+, (http:\/\/127\.0\.0\.1:\d+)/g)].map((m) => m[1]!)
    assert.equal(instances.length, 3, cluster.output())
  })
  after(async () => {
    await cluster?.stop()
    pg?.destroy()
  })

  /** A new account, its factor enrolled on `enrolAt` and activated on `activateAt` with the current step's code. */
  const withFactor = async (enrolAt: string, activateAt = enrolAt): Promise<Factor> => {
    users += 1
    const email = `mfa-${users}@example.com`
    const { id, auth } = await signUpAndLogIn(enrolAt, email, PASSWORD)
    const enrolled = await body(await fetch(`${enrolAt}/v1/users/${id}/totp`, { method: 'POST', headers: auth }), 201) as { secret: string, otpauthUri: string }
    const secret = base32Decode(enrolled.secret)
    assert.equal(secret.length, 20)
    const step = stepNow()
    const activated = await fetch(`${activateAt}/v1/users/${id}/totp`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ code: codeOf(secret, step) }) })
    const { recoveryCodes } = await body(activated, 200) as { recoveryCodes: string[] }
    assert.equal(recoveryCodes.length, 10)
    return { id, email, secret, recoveryCodes, auth, activatedAt: step }
  }

  /** POST /v1/sessions with the password at `base`: 401 MFA_REQUIRED, and its challenge. */
  const challengeAt = async (base: string, factor: Factor): Promise<string> => {
    const problem = await body(await fetch(`${base}/v1/sessions`, json({ email: factor.email, password: PASSWORD })), 401) as Problem
    assert.equal(problem.code, 'MFA_REQUIRED', `${named(base)}: ${JSON.stringify(problem)}`)
    assert.match(problem.challenge ?? '', /^[\w-]{43}$/)
    return problem.challenge!
  }

  const answer = async (base: string, challenge: string, code: string): Promise<Response> =>
    await fetch(`${base}/v1/sessions`, json({ challenge, code }))

  const refused = async (res: Response, where: string): Promise<void> => {
    const text = await res.text()
    assert.equal(res.status, 401, `${where}: ${text}`)
    assert.equal((JSON.parse(text) as Problem).code, 'INVALID_MFA_CODE', `${where}: ${text}`)
  }

  test('enrolled on one instance, challenged on another, answered on a third; a code or recovery code used on one is refused on the others', async (t) => {
    const [a, b, c] = instances as [string, string, string]
    const factor = await withFactor(a)
    const next = codeOf(factor.secret, factor.activatedAt + 1)

    // Log-in on B, answered on C with the next step's code: a session, good on every instance.
    const session = await body(await answer(c, await challengeAt(b, factor), next), 201) as Session
    assert.equal(session.user.id, factor.id)
    for (const instance of instances) {
      const current = await body(await fetch(`${instance}/v1/sessions/current`, { headers: { authorization: `Bearer ${session.token}` } }), 200) as Session
      assert.equal(current.user.id, factor.id, named(instance))
    }

    // The same code with a new challenge from A, answered on B: used already (on C).
    await refused(await answer(b, await challengeAt(a, factor), next), 'the next step\'s code again, on instance 2')
    // The activation's code (the current step) is spent too, wherever it is tried.
    await refused(await answer(c, await challengeAt(c, factor), codeOf(factor.secret, factor.activatedAt)), 'the activation\'s code, on instance 3')

    // A challenge made on B, answered on A with a recovery code; the same recovery code on C: spent.
    const recovery = factor.recoveryCodes[0]!
    const recovered = await body(await answer(a, await challengeAt(b, factor), recovery), 201) as Session
    assert.equal(recovered.user.id, factor.id)
    await refused(await answer(c, await challengeAt(c, factor), recovery), 'the recovery code again, on instance 3')
    // Another recovery code still works, through the balancer.
    assert.equal(((await body(await answer(balancer, await challengeAt(balancer, factor), factor.recoveryCodes[1]!), 201)) as Session).user.id, factor.id)
    t.diagnostic(`figures ${JSON.stringify({ scenario: 'codes across instances', stepsAtStart: factor.activatedAt, stepAtEnd: stepNow() })}`)
  })

  test('one code sent to all 3 instances at once, each with its own challenge: one session, the others 401 INVALID_MFA_CODE', async (t) => {
    // Each round needs a step not used yet: a new account, activated with the current step, then
    // the next step's code sent everywhere.
    const ROUNDS = 5
    const outcomes: Record<string, number> = {}
    const winners: Record<string, number> = {}
    for (let round = 0; round < ROUNDS; round++) {
      const factor = await withFactor(instances[round % 3]!, instances[(round + 1) % 3]!)
      const code = codeOf(factor.secret, factor.activatedAt + 1)
      // Three log-ins first, one per instance, each with its challenge.
      const challenges = await Promise.all(instances.map(async (instance) => await challengeAt(instance, factor)))
      const answers = await Promise.all(instances.map(async (instance, i) => {
        const res = await answer(instance, challenges[i]!, code)
        return { status: res.status, text: await res.text(), where: named(instance) }
      }))
      for (const { status } of answers) outcomes[status] = (outcomes[status] ?? 0) + 1
      const won = answers.filter((answer) => answer.status === 201)
      assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(answers)}`)
      winners[won[0]!.where] = (winners[won[0]!.where] ?? 0) + 1
      assert.equal((JSON.parse(won[0]!.text) as Session).user.id, factor.id)
      for (const lost of answers.filter((answer) => answer.status !== 201)) {
        assert.equal(lost.status, 401, `round ${round}, ${lost.where}: ${lost.text}`)
        assert.equal((JSON.parse(lost.text) as Problem).code, 'INVALID_MFA_CODE', `round ${round}, ${lost.where}: ${lost.text}`)
      }
      // The losers' challenges were not spent; the code is, for every one of them.
      await refused(await answer(balancer, await challengeAt(balancer, factor), code), `round ${round}, afterwards`)
    }
    t.diagnostic(`figures ${JSON.stringify({ scenario: 'simultaneous answers', rounds: ROUNDS, statuses: outcomes, winners })}`)
    assert.deepEqual(outcomes, { 201: ROUNDS, 401: 2 * ROUNDS })
  })

  test('an instance on the same database without SECRET_KEY: 503 SERVICE_UNAVAILABLE for the factor; its challenge still answered elsewhere', async (t) => {
    const factor = await withFactor(instances[0]!)
    // One more instance (and its own balancer) on the same database, without the key.
    const bare = await startCluster({ DATABASE_URL: pg.url, SHUTDOWN_GRACE_MS: '1000', INSTANCES: '1' })
    t.after(async () => { await bare.stop() })
    const [keyless] = [...bare.output().matchAll(/instance \d+: pid \d+, (http:\/\/127\.0\.0\.1:\d+)/g)].map((m) => m[1]!)
    assert.ok(keyless !== undefined, bare.output())

    const unavailable = async (res: Response, where: string): Promise<void> => {
      const text = await res.text()
      assert.equal(res.status, 503, `${where}: ${text}`)
      assert.equal((JSON.parse(text) as Problem).code, 'SERVICE_UNAVAILABLE', `${where}: ${text}`)
      assert.match(res.headers.get('retry-after') ?? '', /^\d+$/, where)
    }
    // Enrolment of a new account there.
    const other = await signUpAndLogIn(keyless, 'mfa-keyless@example.com', PASSWORD)
    await unavailable(await fetch(`${keyless}/v1/users/${other.id}/totp`, { method: 'POST', headers: other.auth }), 'enrolment without a key')
    // A log-in there still asks for the code, and the code cannot be checked there...
    const challenge = await challengeAt(keyless, factor)
    await unavailable(await answer(keyless, challenge, factor.recoveryCodes[0]!), 'an answer without a key')
    // ...which neither spent the challenge nor the recovery code: both good on a keyed instance.
    assert.equal(((await body(await answer(instances[1]!, challenge, factor.recoveryCodes[0]!), 201)) as Session).user.id, factor.id)
  })
})
