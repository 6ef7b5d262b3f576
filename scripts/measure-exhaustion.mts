// Measures two exhaustion attacks against the code in ROOT (docs/SECURITY.md reports the figures):
// `node --import tsx scripts/measure-exhaustion.mts ROOT` (ROOT: a checkout of this repository).
// One anonymous sign-up body of 80,000 unknown members; one list page over 100 posts of 100,000
// emoji each, alone and six at once.
const root = process.argv[2]!
const { buildTestApp, createUser } = await import(`${root}/test/helper.ts`)
const { app, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '0', SIGNUPS_PER_CLIENT_PER_HOUR: '1000000', LOGIN_FAILURES_PER_EMAIL: '1000000', LOGIN_FAILURES_PER_CLIENT: '1000000', LOGIN_FAILURES_PER_ACCOUNT: '1000000' })
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const body = '{' + Array.from({ length: 80_000 }, (_, i) => `"m${i}":1`).join(',') + '}'
const times: number[] = []
let size = 0; let status = 0
for (let i = 0; i < 7; i++) {
  const t0 = process.hrtime.bigint()
  const res = await app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json' }, payload: body })
  times.push(Number(process.hrtime.bigint() - t0) / 1e6)
  size = res.rawPayload.length; status = res.statusCode
}
console.log(`80,000-member body (${body.length} bytes): status ${status}, answer ${size} bytes, median ${median(times).toFixed(1)} ms of 7`)
const user = await createUser(app)
const content = '\u{1F600}'.repeat(100_000)
for (let i = 0; i < 100; i++) {
  const r = await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title: `t${i}`, content } })
  if (r.statusCode !== 201) throw new Error(r.body)
}
const ptimes: number[] = []
for (let i = 0; i < 5; i++) {
  const t0 = process.hrtime.bigint()
  const res = await app.inject({ method: 'GET', url: '/v1/posts?limit=100' })
  ptimes.push(Number(process.hrtime.bigint() - t0) / 1e6)
  size = res.rawPayload.length
}
console.log(`GET /v1/posts?limit=100 over 100 posts of 100,000 emoji: answer ${size} bytes, median ${median(ptimes).toFixed(1)} ms of 5`)
const t0 = process.hrtime.bigint()
await Promise.all(Array.from({ length: 6 }, () => app.inject({ method: 'GET', url: '/v1/posts?limit=100' })))
const six = Number(process.hrtime.bigint() - t0) / 1e6
console.log(`6 concurrent such reads: ${six.toFixed(0)} ms in all`)
await close()
