// `npm run bench:console`: how soon the console's Orders screen is usable with 10,000 orders.
// The built service (as `npm start` runs it) on a fresh SQLite database, or on PostgreSQL too when
// BENCH_DATABASE_URL names a server where a scratch database may be created. 10,000 orders are
// placed through the API (rate limits off for the filling only), then the service is started
// again with the defaults an operator gets, and Debian's Chromium opens /console/#/orders signed
// in, RUNS times (default 7), each in a new context (nothing cached): the figure is the time from
// the navigation to the first page's 20 orders shown, then to the next 20 after "More orders".
// Keyset pages, so neither depends on how many orders there are.
//
//   npm run build && npm run bench:console
//   CONSOLE_RUNS=15 BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:console
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../scripts/free-port.mjs'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import { launchChromium } from '../test/system/chromium.js'
import { median } from './load.js'

const ORDERS = Number(process.env.CONSOLE_ORDERS ?? 10_000)
const RUNS = Number(process.env.CONSOLE_RUNS ?? 7)
const ADMIN = { email: 'operator@example.com', password: 'operator password 1' }
const FILLING = { RATE_LIMIT_PER_MINUTE: '0', SIGNUPS_PER_CLIENT_PER_HOUR: '1000000', LOGIN_FAILURES_PER_CLIENT: '1000000' }

async function start (databaseUrl: string, extra: Record<string, string>): Promise<{ base: string, child: ChildProcess }> {
  const port = await freePort()
  const child = spawn(process.execPath, serviceArguments(), {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, PORT: String(port), METRICS_PORT: String(await freePort()), SHUTDOWN_GRACE_MS: '0', ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, ...extra },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const base = `http://127.0.0.1:${port}`
  for (const began = performance.now(); ;) {
    if (await fetch(`${base}/health/ready`).then((res) => res.status === 200, () => false)) return { base, child }
    if (child.exitCode !== null || performance.now() - began > 60_000) throw new Error('the service did not start')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function stop (child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
}

async function send (base: string, path: string, body: unknown, token?: string): Promise<{ id: number, token?: string }> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }, body: JSON.stringify(body) })
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return await res.json() as { id: number, token?: string }
}

async function fill (base: string): Promise<void> {
  const admin = (await send(base, '/v1/sessions', ADMIN)).token!
  const product = await send(base, '/v1/products', { name: 'Console bench', price: 100, category: 'HOME', stock: ORDERS + 1 }, admin)
  const buyers: string[] = []
  for (let i = 0; i < 20; i++) {
    const email = `buyer${i}@example.com`
    await send(base, '/v1/users', { email, name: `Buyer ${i}`, password: 'buyer password 1' })
    buyers.push((await send(base, '/v1/sessions', { email, password: 'buyer password 1' })).token!)
  }
  let next = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < ORDERS) {
      const n = next++
      await send(base, '/v1/orders', { productId: product.id, quantity: 1 }, buyers[n % buyers.length])
    }
  }))
}

async function measure (label: string, databaseUrl: string): Promise<void> {
  const filling = await start(databaseUrl, FILLING)
  const filled = performance.now()
  await fill(filling.base)
  console.log(`${label}: ${ORDERS} orders placed through the API in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
  await stop(filling.child)

  const { base, child } = await start(databaseUrl, {})
  const browser = await launchChromium()
  try {
    const firstPage: number[] = []
    const secondPage: number[] = []
    for (let run = 0; run < RUNS; run++) {
      const token = (await send(base, '/v1/sessions', ADMIN)).token!
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      await context.addInitScript((kept) => { sessionStorage.setItem('console.token', kept) }, token)
      const page = await context.newPage()
      const began = performance.now()
      await page.goto(`${base}/console/#/orders`)
      await page.locator('.cards li').nth(19).waitFor({ timeout: 30_000 })
      firstPage.push(performance.now() - began)
      const more = performance.now()
      await page.getByRole('button', { name: 'More orders' }).click()
      await page.locator('.cards li').nth(39).waitFor({ timeout: 30_000 })
      secondPage.push(performance.now() - more)
      await context.close()
    }
    const ms = (values: number[]): string => `median ${median(values).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms (${values.map((v) => v.toFixed(0)).join(', ')})`
    console.log(`${label}: navigation to the first 20 of ${ORDERS} orders shown: ${ms(firstPage)}`)
    console.log(`${label}: "More orders" to the next 20 shown: ${ms(secondPage)}`)
    console.log(`${label}: ${Math.max(...firstPage) <= 1000 ? 'PASS' : 'FAIL'} (goal: usable within 1 s of navigation, every run)`)
  } finally {
    await browser.close()
    await stop(child)
  }
}

const dir = mkdtempSync(join(tmpdir(), 'console-bench-'))
try {
  await measure('SQLite', `file:${join(dir, 'api.db')}`)
  if (process.env.BENCH_DATABASE_URL !== undefined) {
    const scratch = await scratchDatabase('console_bench', process.env.BENCH_DATABASE_URL)
    try { await measure('PostgreSQL', scratch.url) } finally { await scratch.drop() }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
