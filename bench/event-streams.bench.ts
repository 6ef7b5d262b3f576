// `npm run bench:streams`: what open event streams cost one instance, on SQLite.
//
// The service is built and started as `npm start` starts it (bench/load.ts: production settings,
// logs at info to a file, metrics on), pinned to core 0; this process, the streams' reader and the
// writer, and wrk run on core 1. On a seeded database (bench/seed.ts):
//
// 1. Reads beside idle streams: GET /v1/posts/{id} driven by wrk, in rounds alternating with no
//    stream open and with STREAMS idle streams open (10 for each of STREAMS / 10 users: the per-user
//    cap), medians of the rounds. Goal: no measurable drop (the A/B difference within the A/A
//    spread of the rounds without streams).
// 2. Memory: the service's resident memory before the streams open and once they are all open and
//    have had their first keep-alive. Goal: growth ≤ 50 MiB for 1,000 streams.
// 3. Fan-out: EVENTS posts are created one after another, every 100 ms; each one's `post.created`
//    reaches every stream (every user reads it). The delay is measured from the moment the
//    creating request was sent (its commit comes later, so the figure reads high) to the moment
//    this process has parsed the event off each stream. Goal: p99 ≤ 100 ms. The reader shares its core with
//    nothing else during this part; its CPU share is printed, since a saturated reader would
//    read the delays high.
//
//   npm run bench:streams                         1,000 streams, 5 rounds of 5 s, 50 events
//   npm run bench:streams -- --smoke              100 streams, 3 rounds of 1 s, 10 events: checks it runs
//   BENCH_STREAMS=2000 BENCH_SECONDS=10 …         other sizes
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'
import { serviceArguments } from '../scripts/start-command.mjs'
import { scratchDatabase } from '../test/scratch-database.js'
import { buildService, measureWrk, median, pinLoadGenerator, PINNED, startService, type Measured, type Server } from './load.js'
import { STREAMS_PER_USER } from '../src/events/event-stream.js'
import { FULL_SIZE, SMOKE_SIZE, seed } from './seed.js'

const SMOKE = process.argv.includes('--smoke')
const STREAMS = Number(process.env.BENCH_STREAMS ?? (SMOKE ? 100 : 1000))
const SECONDS = Number(process.env.BENCH_SECONDS ?? (SMOKE ? 1 : 5))
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SMOKE ? 3 : 5))
const EVENTS = Number(process.env.BENCH_EVENTS ?? (SMOKE ? 10 : 50))
const CONNECTIONS = 32
const PER_USER = STREAMS_PER_USER

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

interface OpenStream { close: () => void }

/**
 * Opens a stream and hands every event's sequence to `onEvent` as it is parsed. Only the `id:`
 * lines matter here, so the parser looks for those and nothing else.
 */
async function openStream (dispatcher: Agent, url: string, token: string, onEvent: (sequence: number) => void, onOpen: () => void): Promise<OpenStream> {
  const controller = new AbortController()
  const res = await request(`${url}/v1/events`, { dispatcher, signal: controller.signal, headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` } })
  if (res.statusCode !== 200) throw new Error(`a stream was refused: ${res.statusCode} ${await res.body.text()}`)
  let rest = ''
  let opened = false
  res.body.setEncoding('utf8')
  res.body.on('data', (chunk: string) => {
    if (!opened) { opened = true; onOpen() }
    const text = rest + chunk
    let from = 0
    for (;;) {
      const at = text.indexOf('\nid: ', from)
      if (at === -1) break
      const end = text.indexOf('\n', at + 5)
      if (end === -1) break
      onEvent(Number(text.slice(at + 5, end)))
      from = end
    }
    rest = text.slice(Math.max(from, text.length - 64))
  })
  res.body.on('error', () => {})
  return { close: () => { controller.abort() } }
}

function cpuShare (started: NodeJS.CpuUsage, wall: number): number {
  const used = process.cpuUsage(started)
  return (used.user + used.system) / 1000 / wall
}

async function main (): Promise<void> {
  pinLoadGenerator()
  const work = mkdtempSync(join(tmpdir(), 'bench-streams-'))
  const scratch = await scratchDatabase('bench-streams', undefined)
  let service: Server | undefined
  const streams: OpenStream[] = []
  const dispatcher = new Agent({ connections: null, pipelining: 0 })
  const lines: string[] = []
  let failed = false
  const check = (what: string, ok: boolean, figure: string): void => {
    lines.push(`${ok ? 'PASS' : 'FAIL'}  ${what}: ${figure}`)
    if (!ok) failed = true
  }
  try {
    const size = SMOKE ? SMOKE_SIZE : FULL_SIZE
    const users = Math.ceil(STREAMS / PER_USER)
    if (size.users < users + 1) throw new Error(`the seed has ${size.users} users; ${users + 1} are needed`)
    const data = await seed(scratch.url, size)
    buildService()
    service = await startService(serviceArguments(), scratch.url, join(work, 'service.log'))
    const { url } = service
    console.log(`service on ${url}; ${PINNED ? 'service on core 0, this process and wrk on core 1 (taskset)' : 'not pinned (taskset or a second core missing)'}`)
    const read = { prefix: '/v1/posts/', ids: data.postIds }

    // 1 and 2: reads without and with the idle streams, alternating; memory once they are open.
    const without: Measured[] = []
    const beside: Measured[] = []
    let before = 0
    let after = 0
    await measureWrk(url, read, CONNECTIONS, SECONDS) // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      without.push(await measureWrk(url, read, CONNECTIONS, SECONDS))
      service.resetPeak()
      await sleep(500)
      before += service.peakRss() / ROUNDS
      let opened = 0
      const opening = performance.now()
      for (let i = 0; i < STREAMS; i++) {
        const user = data.users[1 + Math.floor(i / PER_USER)]!
        streams.push(await openStream(dispatcher, url, user.token, () => {}, () => { opened += 1 }))
      }
      while (opened < STREAMS) await sleep(10)
      if (round === 0) console.log(`${fmt(STREAMS)} streams open in ${fmt(performance.now() - opening)} ms`)
      service.resetPeak()
      await sleep(1000)
      after += service.peakRss() / ROUNDS
      beside.push(await measureWrk(url, read, CONNECTIONS, SECONDS))
      for (const stream of streams.splice(0)) stream.close()
      await sleep(500)
    }
    const bad = [...without, ...beside].reduce((sum, m) => sum + m.bad, 0)
    const a = median(without.map((m) => m.rps))
    const b = median(beside.map((m) => m.rps))
    const spread = (Math.max(...without.map((m) => m.rps)) - Math.min(...without.map((m) => m.rps))) / a
    const generator = Math.max(...[...without, ...beside].map((m) => m.generatorCpu))
    console.log(`GET /v1/posts/{id}: ${fmt(a)} req/s with no stream open (rounds ${without.map((m) => fmt(m.rps)).join(', ')}), ` +
      `${fmt(b)} with ${fmt(STREAMS)} idle (rounds ${beside.map((m) => fmt(m.rps)).join(', ')}); p99 ${median(without.map((m) => m.p99))} / ${median(beside.map((m) => m.p99))} ms; wrk used at most ${fmt(generator * 100)} % of its core`)
    check('reads beside idle streams: no drop beyond the spread of the rounds without them',
      bad === 0 && (a - b) / a <= spread, `${fmt((b / a - 1) * 100, 1)} % against an A/A spread of ${fmt(spread * 100, 1)} %${bad > 0 ? `, ${bad} bad answers` : ''}`)
    check(`memory for ${fmt(STREAMS)} idle streams ≤ ${fmt(STREAMS * 0.05)} MiB`, after - before <= STREAMS * 0.05,
      `${fmt(before, 1)} → ${fmt(after, 1)} MiB resident (+${fmt(after - before, 1)})`)

    // 3: fan-out of each new event to every stream.
    const arrivals = new Map<number, number[]>()
    let opened = 0
    for (let i = 0; i < STREAMS; i++) {
      const user = data.users[1 + Math.floor(i / PER_USER)]!
      streams.push(await openStream(dispatcher, url, user.token, (sequence) => {
        let list = arrivals.get(sequence)
        if (list === undefined) arrivals.set(sequence, list = [])
        list.push(performance.now())
      }, () => { opened += 1 }))
    }
    while (opened < STREAMS) await sleep(10)
    await sleep(500)
    const writer = data.users[0]!
    // Each post makes one event, post.created, and only this writer writes now: the i-th new
    // sequence the streams see is the i-th post's. Its delay counts from the moment the request
    // was sent (the commit is later), so it reads high, never low.
    const sent: number[] = []
    const cpu = process.cpuUsage()
    const started = performance.now()
    for (let i = 0; i < EVENTS; i++) {
      sent.push(performance.now())
      const res = await request(`${url}/v1/posts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${writer.token}` },
        body: JSON.stringify({ title: `Live ${i}`, content: 'Fan-out.' })
      })
      if (res.statusCode !== 201) throw new Error(`POST /v1/posts answered ${res.statusCode}: ${await res.body.text()}`)
      await res.body.dump()
      await sleep(100)
    }
    const answered = (): Map<number, number> => new Map([...arrivals.keys()].sort((x, y) => x - y).slice(0, EVENTS).map((sequence, i) => [sequence, sent[i]!]))
    const deadline = performance.now() + 10_000
    while ((arrivals.size < EVENTS || [...arrivals.values()].some((times) => times.length < STREAMS)) && performance.now() < deadline) await sleep(50)
    const reader = cpuShare(cpu, performance.now() - started)
    const delays: number[] = []
    let missing = (EVENTS - arrivals.size) * STREAMS
    for (const [sequence, at] of answered()) {
      const times = arrivals.get(sequence) ?? []
      missing += STREAMS - times.length
      for (const t of times) delays.push(t - at)
    }
    console.log(`fan-out of ${EVENTS} events to ${fmt(STREAMS)} streams: p50 ${fmt(quantile(delays, 0.5), 1)} ms, p99 ${fmt(quantile(delays, 0.99), 1)} ms, max ${fmt(Math.max(...delays), 1)} ms after the write was sent; ` +
      `the reader used ${fmt(reader * 100)} % of its core`)
    check(`an event reaches ${fmt(STREAMS)} streams within 100 ms at p99`, missing === 0 && quantile(delays, 0.99) <= 100,
      `p99 ${fmt(quantile(delays, 0.99), 1)} ms${missing > 0 ? `, ${missing} deliveries missing` : ''}`)
  } finally {
    for (const stream of streams) stream.close()
    await service?.stop()
    await dispatcher.close().catch(() => {})
    await scratch.drop()
    rmSync(work, { recursive: true, force: true })
  }
  console.log(`\n${lines.join('\n')}`)
  if (SMOKE) {
    console.log('(smoke: the goals are not judged on this little data)')
    return
  }
  if (failed) process.exitCode = 1
}

await main()
