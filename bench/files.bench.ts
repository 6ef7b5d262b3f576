// `npm run bench:files`: images, on the built service with its files in a folder (SQLite).
//
//   npm run build && npm run bench:files
//
// - an upload of a 12-megapixel JPEG (4000 × 3000 of noise, ~ the size a phone sends): the time
//   from request to 201, one at a time (p50, p99 over FILES_UPLOADS, default 12), and images a
//   second with 4 in flight;
// - reads of a thumbnail (`GET /v1/files/{id}/thumb`, with its row looked up, its headers, the
//   storage's stream) against the floor: @fastify/static serving the same file from the same
//   folder (bench/floor-static.mjs); req/s, rounds alternated, the median ratio;
// - `GET /v1/posts/{id}` while uploads run 4 at a time, against the same reads idle: p99 (the
//   processing is off the event loop, two images at a time);
// - the server's peak resident memory while 20 uploads of a ~9 MiB image arrive at once (two are
//   processed at once and eight wait; the rest are refused 503 at once, as the queue is full).
//
// Servers on core 0, this process (the load generator) on core 1 (taskset), as `npm run bench`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { freePort } from '../scripts/free-port.mjs'
import { serviceArguments } from '../scripts/start-command.mjs'
import { measure, median, PINNED, pinLoadGenerator, start, startServer } from './load.js'

const UPLOADS = Number(process.env.FILES_UPLOADS ?? 12)
const ROUNDS = Number(process.env.FILES_ROUNDS ?? 3)
const SECONDS = Number(process.env.FILES_SECONDS ?? 5)
const ADMIN = { email: 'bench@example.com', password: 'bench password 1' }

pinLoadGenerator()
const dir = mkdtempSync(join(tmpdir(), 'bench-files-'))
const storage = join(dir, 'files')
const port = await freePort()
const service = await startServer('service', serviceArguments(), {
  NODE_ENV: 'production', DATABASE_URL: `file:${join(dir, 'app.db')}`, STORAGE_URL: `file:${storage}`, PORT: String(port),
  METRICS_PORT: String(await freePort()), LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000', ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, SHUTDOWN_GRACE_MS: '0'
}, join(dir, 'service.log'), port)

const results: Record<string, unknown> = { pinned: PINNED }
try {
  const base = service.url
  const session = await (await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json() as { token: string }
  const auth = { authorization: `Bearer ${session.token}` }
  const post = await (await fetch(`${base}/v1/posts`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'Bench', content: 'images' }) })).json() as { id: number }
  const photo = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: { r: 120, g: 110, b: 100 }, noise: { type: 'gaussian', mean: 128, sigma: 30 } } }).jpeg({ quality: 85 }).toBuffer()
  results.photoBytes = photo.length

  // Each upload to a product of its own (a post holds 20): an admin's products.
  const product = async (): Promise<number> => (await (await fetch(`${base}/v1/products`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Bench', price: 100, category: 'HOME' }) })).json() as { id: number }).id
  const upload = async (bytes: Buffer): Promise<{ status: number, ms: number, body: { id: number, sha256: string } }> => {
    const target = await product()
    const started = performance.now()
    const res = await fetch(`${base}/v1/products/${target}/images`, { method: 'POST', headers: { ...auth, 'content-type': 'image/jpeg' }, body: bytes })
    const body = await res.json() as { id: number, sha256: string }
    return { status: res.status, ms: performance.now() - started, body }
  }
  await upload(photo)
  const times: number[] = []
  for (let i = 0; i < UPLOADS; i++) {
    const { status, ms } = await upload(photo)
    if (status !== 201) throw new Error(`upload answered ${status}`)
    times.push(ms)
  }
  times.sort((a, b) => a - b)
  results.uploadMs = { p50: Math.round(median(times)), p99: Math.round(times[Math.min(times.length - 1, Math.ceil(times.length * 0.99) - 1)]!), runs: UPLOADS }

  const inFlight = async (n: number, total: number): Promise<number> => {
    let next = 0
    const started = performance.now()
    await Promise.all(Array.from({ length: n }, async () => {
      while (next < total) {
        next++
        const { status } = await upload(photo)
        if (status !== 201) throw new Error(`upload answered ${status}`)
      }
    }))
    return total / ((performance.now() - started) / 1000)
  }
  results.imagesPerSecondAt4 = Number((await inFlight(4, 16)).toFixed(2))

  // Thumbnail reads against @fastify/static on the same file.
  const thumbOf = (await upload(photo)).body
  const floorPort = await freePort()
  const floor = await startServer('floor', [join(import.meta.dirname, 'floor-static.mjs')], { FLOOR_ROOT: storage, PORT: String(floorPort) }, join(dir, 'floor.log'), floorPort)
  const key = `${thumbOf.sha256}.thumb`
  const ratios: number[] = []
  const rps = { service: [] as number[], floor: [] as number[] }
  for (let round = 0; round < ROUNDS + 1; round++) {
    const s = await measure(service.url, { connections: 10, seconds: SECONDS, requests: [{ method: 'GET', path: `/v1/files/${thumbOf.id}/thumb` }] })
    const f = await measure(floor.url, { connections: 10, seconds: SECONDS, requests: [{ method: 'GET', path: `/${key.slice(0, 2)}/${key.slice(2, 4)}/${key}` }] })
    if (s.bad > 0 || f.bad > 0) throw new Error(`bad answers: ${s.badDetail} ${f.badDetail}`)
    if (round === 0) continue
    rps.service.push(s.rps)
    rps.floor.push(f.rps)
    ratios.push(s.rps / f.rps)
  }
  await floor.stop()
  results.thumbnailReads = { serviceRps: Math.round(median(rps.service)), floorRps: Math.round(median(rps.floor)), ratio: Number(median(ratios).toFixed(2)) }

  // Reads of a post, idle and during uploads 4 at a time.
  const read = { connections: 4, seconds: SECONDS, requests: [{ method: 'GET' as const, path: `/v1/posts/${post.id}` }] }
  await measure(service.url, read)
  const idle = await measure(service.url, read)
  let uploading = true
  const burst = Promise.all(Array.from({ length: 4 }, async () => { while (uploading) await upload(photo) }))
  const during = start(service.url, read)
  const busy = await during.done
  uploading = false
  await burst
  results.postReadsP99Ms = { idle: idle.p99, duringUploads: busy.p99, ratio: Number((busy.p99 / Math.max(1, idle.p99)).toFixed(2)), idleRps: Math.round(idle.rps), duringRps: Math.round(busy.rps) }

  // 20 large uploads at once: the peak resident memory, and how many were taken.
  const large = await sharp({ create: { width: 2600, height: 2600, channels: 3, background: { r: 1, g: 2, b: 3 }, noise: { type: 'gaussian', mean: 128, sigma: 90 } } }).jpeg({ quality: 100 }).toBuffer()
  results.largeBytes = large.length
  service.resetPeak()
  const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await upload(large)).status))
  results.twentyLargeAtOnce = { peakRssMiB: Math.round(service.peakRss()), answered: Object.fromEntries([...new Set(statuses)].map((s) => [s, statuses.filter((x) => x === s).length])) }
  results.highWaterMiB = Math.round(service.highWater())
} finally {
  await service.stop()
  rmSync(dir, { recursive: true, force: true })
}
console.log(JSON.stringify(results, null, 2))
