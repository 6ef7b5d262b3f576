import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { startTestProvider, type TestProvider } from '../support/oidc-provider.js'
import { body } from './api-client.js'
import { startCluster, type ClusterProcess } from './cluster-process.js'
import { json } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// Sign-in with an identity provider on three instances behind HAProxy (`npm run cluster`), on
// one PostgreSQL of this test's own: the flow begun on one instance (its PKCE verifier, state
// and nonce kept in the database) is finished on another, the session it makes works on every
// instance, and the same state is refused by the third. Of simultaneous finishes of one flow on
// every instance, one takes the flow and makes a session; the others are refused without
// reaching the provider.

const haproxyMissing = (await new Promise<boolean>((resolve) => {
  const probe = spawn('haproxy', ['-v'], { stdio: 'ignore' })
  probe.once('error', () => { resolve(true) })
  probe.once('exit', () => { resolve(false) })
}))
const skip = skipWithoutPostgres !== false
  ? skipWithoutPostgres
  : haproxyMissing && process.env.CI === undefined ? 'haproxy is not on the PATH (apt-get install haproxy)' : false

const PROVIDER_ID = 'local'
const CLIENT = {
  clientId: 'resource-api-cluster',
  clientSecret: 'a-client-secret-for-the-cluster-test-0123456789',
  // Never opened: signIn stops at the provider's redirect back to it.
  redirectUris: ['http://127.0.0.1:9/signed-in']
}
const REDIRECT_URI = CLIENT.redirectUris[0]!
const ACCOUNTS = ['ada', 'brian', 'chen', 'dana', 'emeka'].map((name) => ({ sub: `sub-${name}`, email: `${name}@example.com`, email_verified: true, name }))

interface Session { token: string, user: { id: number, email: string, emailVerified: boolean } }

describe('sign-in with an identity provider across 3 instances behind HAProxy', { skip, timeout: 180_000 }, () => {
  let provider: TestProvider
  let pg: PrivatePostgres
  let cluster: ClusterProcess
  /** Each instance directly, in the order the cluster started them, and the balancer. */
  let instances: string[] = []
  let balancer: string
  const named = (base: string): string => base === balancer ? 'HAProxy' : `instance ${instances.indexOf(base) + 1}`

  before(async () => {
    provider = await startTestProvider({ clients: [CLIENT], accounts: ACCOUNTS })
    pg = await startPrivatePostgres()
    cluster = await startCluster({
      DATABASE_URL: pg.url,
      SHUTDOWN_GRACE_MS: '1000',
      OIDC_PROVIDERS: JSON.stringify([{ id: PROVIDER_ID, issuer: provider.issuer, ...CLIENT }]),
      OIDC_TIMEOUT_SECONDS: '5'
    })
    balancer = cluster.base
    instances = [...cluster.output().matchAll(/instance \d+: pid \d+, (http:\/\/127\.0\.0\.1:\d+)/g)].map((m) => m[1]!)
    assert.equal(instances.length, 3, cluster.output())
  })
  after(async () => {
    await cluster?.stop()
    pg?.destroy()
    await provider?.close()
  })

  /** POST /v1/oidc-authorizations at `base`, and the provider's log-in and consent as `sub`: the redirect back. */
  const begin = async (base: string, sub: string): Promise<URL> => {
    const begun = await body(await fetch(`${base}/v1/oidc-authorizations`, json({ provider: PROVIDER_ID, redirectUri: REDIRECT_URI })), 201) as { authorizationUrl: string, expiresAt: string }
    const authorizationUrl = new URL(begun.authorizationUrl)
    assert.equal(authorizationUrl.origin, provider.issuer)
    assert.ok(Date.parse(begun.expiresAt) > Date.now())
    const back = await provider.signIn(authorizationUrl, sub)
    assert.equal(`${back.origin}${back.pathname}`, REDIRECT_URI)
    assert.equal(back.searchParams.get('iss'), provider.issuer)
    assert.equal(back.searchParams.get('state'), authorizationUrl.searchParams.get('state'))
    return back
  }

  /** POST /v1/sessions at `base` with what the provider sent back. */
  const finish = async (base: string, back: URL): Promise<Response> =>
    await fetch(`${base}/v1/sessions`, json({ provider: PROVIDER_ID, code: back.searchParams.get('code'), state: back.searchParams.get('state') }))

  const refusedAsSpent = async (res: Response, where: string): Promise<void> => {
    const text = await res.text()
    assert.equal(res.status, 400, `${where}: ${text}`)
    assert.equal((JSON.parse(text) as { code: string }).code, 'INVALID_TOKEN', `${where}: ${text}`)
  }

  test('5 sign-ins, each begun on one instance, finished on another, refused again on a third', async (t) => {
    const [a, b, c] = instances as [string, string, string]
    // [begun at, finished at, tried again at]: every instance in each role, and the balancer too.
    const routes: Array<[string, string, string, typeof ACCOUNTS[number]]> = [
      [a, b, c, ACCOUNTS[0]!],
      [b, c, a, ACCOUNTS[1]!],
      [c, a, b, ACCOUNTS[2]!],
      [balancer, a, balancer, ACCOUNTS[3]!],
      [b, balancer, c, ACCOUNTS[4]!]
    ]
    const users = new Map<string, number>()
    for (const [begunAt, finishedAt, againAt, account] of routes) {
      const where = `${account.sub}: begun on ${named(begunAt)}, finished on ${named(finishedAt)}`
      const back = await begin(begunAt, account.sub)
      const res = await finish(finishedAt, back)
      const session = await body(res, 201) as Session
      assert.equal(res.headers.get('location'), '/v1/sessions/current', where)
      assert.equal(session.user.email, account.email, where)
      assert.equal(session.user.emailVerified, true, where)
      users.set(account.sub, session.user.id)
      // The token works through the balancer, on every instance (round robin: 3 in a row reach each once).
      for (let i = 0; i < 3; i++) {
        const current = await body(await fetch(`${balancer}/v1/sessions/current`, { headers: { authorization: `Bearer ${session.token}` } }), 200) as Session
        assert.equal(current.user.id, session.user.id, where)
      }
      // And on each instance directly.
      for (const instance of instances) await body(await fetch(`${instance}/v1/sessions/current`, { headers: { authorization: `Bearer ${session.token}` } }), 200)
      // The same state again, elsewhere: spent.
      await refusedAsSpent(await finish(againAt, back), `${where}, again on ${named(againAt)}`)
    }
    assert.equal(new Set(users.values()).size, ACCOUNTS.length, 'a new account for each subject')

    // The first subject once more (begun through the balancer, finished on instance 3): its linked account.
    const back = await begin(balancer, ACCOUNTS[0]!.sub)
    const again = await body(await finish(c, back), 201) as Session
    assert.equal(again.user.id, users.get(ACCOUNTS[0]!.sub))
    t.diagnostic(`figures ${JSON.stringify({ signIns: routes.length + 1, accounts: users.size })}`)
  })

  test('one flow finished on all 3 instances at once: one session, the others 400 INVALID_TOKEN, the code exchanged once', async (t) => {
    const ROUNDS = 10
    const outcomes: Record<string, number> = {}
    const messages: Record<string, number> = {}
    // How often the provider itself answered the code with tokens, or refused it as used.
    const grants = { success: 0, error: 0 }
    const granted = (): void => { grants.success += 1 }
    const refused = (): void => { grants.error += 1 }
    provider.provider.on('grant.success', granted)
    provider.provider.on('grant.error', refused)
    t.after(() => { provider.provider.off('grant.success', granted); provider.provider.off('grant.error', refused) })
    for (let round = 0; round < ROUNDS; round++) {
      const back = await begin(instances[round % 3]!, ACCOUNTS[1]!.sub)
      const answers = await Promise.all(instances.map(async (instance) => {
        const res = await finish(instance, back)
        return { status: res.status, text: await res.text(), where: named(instance) }
      }))
      for (const answer of answers) outcomes[answer.status] = (outcomes[answer.status] ?? 0) + 1
      assert.equal(answers.filter((answer) => answer.status === 201).length, 1, JSON.stringify(answers))
      for (const answer of answers.filter((a) => a.status !== 201)) {
        assert.equal(answer.status, 400, `${answer.where}: ${answer.text}`)
        const problem = JSON.parse(answer.text) as { code: string, message: string }
        assert.equal(problem.code, 'INVALID_TOKEN', `${answer.where}: ${answer.text}`)
        messages[problem.message] = (messages[problem.message] ?? 0) + 1
      }
      // Spent in every case.
      await refusedAsSpent(await finish(balancer, back), `round ${round}, afterwards`)
    }
    t.diagnostic(`figures ${JSON.stringify({ scenario: 'simultaneous finishes', rounds: ROUNDS, statuses: outcomes, refusals: messages, providerGrants: grants })}`)
    // The flow is held by the finish that took it: the provider saw one token request a flow.
    assert.deepEqual(grants, { success: ROUNDS, error: 0 })
  })
})
