import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { TestContext } from 'node:test'
import sharp from 'sharp'
import { body, signUpAndLogIn } from './api-client.js'
import { attempt, json, startLoad, type Outcome } from './load.js'

// The restore drill's load and checks, the same on both databases (test/system/backup-*.test.ts):
// clients create and change posts; a set of posts made at the start (the victims) is deleted
// after a time T is marked; the writing goes on; then the test loses everything (its own step)
// and restores. Every acknowledged write is recorded with when it was sent and answered.

const WRITERS = 6
export const VICTIMS = 40
/** A write acknowledged this long before the loss must be in the latest restore. */
export const RPO_MS = 2000

/**
 * A write of a post's content: `acknowledged` is when its answer came, Infinity for one that got
 * none (in flight at the loss, or refused). One with no answer may still have committed: a
 * restore that holds its content holds a later state of the post than the acknowledged versions
 * before it (each writer writes one request at a time), not a loss of them.
 */
interface Version { content: string, started: number, acknowledged: number }

/** An image uploaded during the drill: `acknowledged` as for a Version. */
export interface DrillImage { id: number, postId: number, sha256: string, acknowledged: number }

export interface DrillRecord {
  /** Each post acknowledged as created, with every version of its content sent, in order (see Version). */
  posts: Map<number, Version[]>
  /** The victims: made before T, deleted after it (when the delete was acknowledged). */
  victims: Map<number, number | undefined>
  /** The marked time. */
  at: number
  acknowledged: number
  /** Images uploaded among the writes (with `images`), each answered 201. */
  images: DrillImage[]
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/**
 * Runs the load against `base`: victims first, then writers for `beforeMs`, T marked, the victims
 * deleted while the writers go on for `afterMs`. Resolves once the writers have stopped; the
 * caller loses the database while `loseWhileWriting` runs (called after `afterMs`, with the load
 * still on).
 */
export async function drillLoad (base: string, options: {
  beforeMs: number
  afterMs: number
  /** Waits, after `afterMs` and with the writers going on, for what the loss must come after (bounded by the caller). */
  beforeLoss?: () => Promise<void>
  loseWhileWriting: () => Promise<void>
  /** One more client uploads images to its posts, one after another, until the loss. */
  images?: boolean
}): Promise<DrillRecord> {
  const posts = new Map<number, Version[]>()
  const acknowledge = (id: number, version: Version): void => {
    const versions = posts.get(id) ?? []
    versions.push(version)
    posts.set(id, versions)
  }
  const victimAuthor = await signUpAndLogIn(base, `victims.${Date.now()}@example.com`)
  const victims = new Map<number, number | undefined>()
  for (let i = 0; i < VICTIMS; i++) {
    const started = Date.now()
    const created = await body(await fetch(`${base}/v1/posts`, json({ title: `victim ${i}`, content: 'kept until T' }, victimAuthor.auth)), 201) as { id: number }
    victims.set(created.id, undefined)
    acknowledge(created.id, { content: 'kept until T', started, acknowledged: Date.now() })
  }
  const writers = await Promise.all(Array.from({ length: WRITERS }, async (_, i) => await signUpAndLogIn(base, `writer${i}.${Date.now()}@example.com`)))
  const own: number[][] = writers.map(() => [])
  let acknowledged = 0
  const step = async (worker: number, round: number): Promise<Outcome> => {
    const writer = writers[worker]!
    const mine = own[worker]!
    const content = `w${worker} r${round} ${Date.now()}`
    const started = Date.now()
    // Two creations for one change of an earlier post of the writer's.
    if (round % 3 === 2 && mine.length > 0) {
      const id = mine[round % mine.length]!
      const outcome = await attempt('patch', `${base}/v1/posts/${id}`, { ...json({ content }, writer.auth), method: 'PATCH' })
      if (outcome.status === 200) { acknowledge(id, { content, started, acknowledged: outcome.ended }); acknowledged += 1 } else acknowledge(id, { content, started, acknowledged: Infinity })
      return outcome
    }
    const outcome = await attempt('create', `${base}/v1/posts`, json({ title: `w${worker}`, content }, writer.auth), (b) => String(b.id))
    if (outcome.created !== undefined) {
      mine.push(Number(outcome.created))
      acknowledge(Number(outcome.created), { content, started, acknowledged: outcome.ended })
      acknowledged += 1
    }
    return outcome
  }
  const load = startLoad(WRITERS, step)
  const images: DrillImage[] = []
  let lost = false
  const uploading = options.images === true ? uploadImages(base, images, () => lost) : Promise.resolve()
  await sleep(options.beforeMs)
  const at = Date.now()
  // The victims go, one client, while the writers go on.
  for (const id of victims.keys()) {
    const res = await fetch(`${base}/v1/posts/${id}`, { method: 'DELETE', headers: victimAuthor.auth })
    assert.equal(res.status, 204)
    victims.set(id, Date.now())
    acknowledged += 1
  }
  await sleep(Math.max(0, options.afterMs - (Date.now() - at)))
  await options.beforeLoss?.()
  await options.loseWhileWriting()
  lost = true
  const outcomes = await load.stop()
  await uploading
  for (const o of outcomes) assert.ok(typeof o.status !== 'number' || o.status < 300, `${o.op}: ${o.status}`)
  return { posts, victims, at, acknowledged: acknowledged + VICTIMS, images }
}

/** Uploads distinct small images to posts of one client (20 a post), one at a time, until `stop()`; records each answered 201. */
async function uploadImages (base: string, images: DrillImage[], stop: () => boolean): Promise<void> {
  const uploader = await signUpAndLogIn(base, `uploader.${Date.now()}@example.com`)
  let postId: number | undefined
  for (let n = 0; !stop(); n++) {
    try {
      if (n % 20 === 0) postId = (await body(await fetch(`${base}/v1/posts`, json({ title: 'pictures', content: 'with images' }, uploader.auth)), 201) as { id: number }).id
      const picture = await sharp({ create: { width: 48, height: 32, channels: 3, background: { r: n % 256, g: Math.floor(n / 256) % 256, b: 7 } } }).png().toBuffer()
      const res = await fetch(`${base}/v1/posts/${postId!}/images`, { method: 'POST', headers: { ...uploader.auth, 'content-type': 'image/png' }, body: picture })
      const answered = Date.now()
      if (res.status === 201) {
        const image = await res.json() as { id: number, sha256: string }
        images.push({ id: image.id, postId: postId!, sha256: image.sha256, acknowledged: answered })
      } else {
        await res.arrayBuffer()
      }
    } catch {
      // The machine went in the middle of the request: no answer, nothing recorded.
    }
  }
}

export interface ImageFigures {
  /** Images answered 201 at least `rpoMs` before the loss. */
  acknowledgedBeforeRpo: number
  /** Of those, not served whole by the restored service. */
  missing: number
  /** Images the restored database names (any age) whose bytes it cannot serve: a dangling reference. */
  dangling: number
}

/** The images after the restore: every one acknowledged `rpoMs` before the loss is served with its bytes; none the database names is without them. */
export async function checkImages (base: string, record: DrillRecord, lostAt: number, rpoMs = RPO_MS): Promise<ImageFigures> {
  let acknowledgedBeforeRpo = 0
  let missing = 0
  let dangling = 0
  for (const image of record.images) {
    const res = await fetch(`${base}/v1/files/${image.id}`)
    const bytes = Buffer.from(await res.arrayBuffer())
    const whole = res.status === 200 && createHash('sha256').update(bytes).digest('hex') === image.sha256
    if (res.status !== 200 && res.status !== 404) dangling += 1
    if (image.acknowledged <= lostAt - rpoMs) {
      acknowledgedBeforeRpo += 1
      if (!whole) missing += 1
    }
  }
  return { acknowledgedBeforeRpo, missing, dangling }
}

/** A post as a restored service shows it: its content, or undefined when it is not there (404). */
export async function readPost (base: string, id: number): Promise<string | undefined> {
  const res = await fetch(`${base}/v1/posts/${id}`)
  if (res.status === 404) { await res.arrayBuffer(); return undefined }
  return (await body(res, 200) as { content: string }).content
}

export interface LatestFigures {
  acknowledgedBeforeRpo: number
  missing: number
  /** Writes acknowledged before the loss and missing from the restore (any age). */
  lost: number
  /** How long before the loss the oldest acknowledged write missing from the restore was answered: the data lost spans this; undefined when none is missing. */
  rpoMs: number | undefined
  deletedStillThere: number
  /** The first few writes missing that should be there: what was sent, and what the restore holds. */
  examples: string[]
}

/**
 * The latest restore, read through a service on it: every write acknowledged `rpoMs` (RPO_MS) or
 * more before the loss is there with its last acknowledged content (or a later one), and the victims whose
 * deletion was acknowledged that early are gone. RPO: how long before the loss the oldest
 * acknowledged write that is missing was answered (the restore holds everything acknowledged
 * before that).
 */
export async function checkLatest (base: string, record: DrillRecord, lostAt: number, rpoMs = RPO_MS): Promise<LatestFigures> {
  let acknowledgedBeforeRpo = 0
  let missing = 0
  let lost = 0
  const examples: string[] = []
  let oldestMissing: number | undefined
  const missed = (acknowledged: number): void => {
    if (acknowledged > lostAt) return
    lost += 1
    oldestMissing = Math.min(oldestMissing ?? acknowledged, acknowledged)
  }
  for (const [id, versions] of record.posts) {
    if (record.victims.has(id)) continue
    const content = await readPost(base, id)
    const found = versions.findIndex((v) => v.content === content)
    for (const [i, version] of versions.entries()) {
      const there = found >= i
      if (version.acknowledged <= lostAt - rpoMs) {
        acknowledgedBeforeRpo += 1
        if (!there) {
          missing += 1
          if (examples.length < 5) examples.push(`post ${id} version ${i} "${version.content}" (sent ${lostAt - version.started} ms, answered ${lostAt - version.acknowledged} ms before the loss); the restore holds ${content === undefined ? 'no such post' : `"${content}"`}`)
        }
      }
      if (!there) missed(version.acknowledged)
    }
  }
  let deletedStillThere = 0
  for (const [id, deleted] of record.victims) {
    const there = await readPost(base, id) !== undefined
    if (deleted !== undefined && deleted <= lostAt - rpoMs && there) deletedStillThere += 1
    if (deleted !== undefined && there) missed(deleted)
  }
  return { acknowledgedBeforeRpo, missing, lost, rpoMs: oldestMissing === undefined ? undefined : lostAt - oldestMissing, deletedStillThere, examples }
}

export interface AtFigures { victimsBack: number, startedAfter: number, presentAfter: number, acknowledgedBeforeRpo: number, missing: number }

/**
 * The restore to T: every victim is back; nothing sent after T is there (no post created after
 * it, no content written after it); what was acknowledged RPO_MS or more before T is there.
 */
export async function checkAt (base: string, record: DrillRecord): Promise<AtFigures> {
  let victimsBack = 0
  for (const id of record.victims.keys()) if (await readPost(base, id) !== undefined) victimsBack += 1
  let startedAfter = 0
  let presentAfter = 0
  let acknowledgedBeforeRpo = 0
  let missing = 0
  for (const [id, versions] of record.posts) {
    if (record.victims.has(id)) continue
    const content = await readPost(base, id)
    const found = versions.findIndex((v) => v.content === content)
    for (const [i, version] of versions.entries()) {
      if (version.started > record.at) {
        startedAfter += 1
        if (found === i) presentAfter += 1
      }
      if (version.acknowledged <= record.at - RPO_MS) {
        acknowledgedBeforeRpo += 1
        if (found < i) missing += 1
      }
    }
  }
  return { victimsBack, startedAfter, presentAfter, acknowledgedBeforeRpo, missing }
}

/**
 * The drill's figures as one diagnostic line (`labels` first: the database, the backup), the
 * first missing writes, then its assertions: the latest restore holds every write acknowledged
 * `rpoMs` before the loss and none of the deletions; the restore to T holds every victim and
 * nothing sent after T.
 */
export function reportAndCheck (t: TestContext, drill: { labels: Record<string, unknown>, record: DrillRecord, latest: LatestFigures, at: AtFigures, restoreSeconds: number, restoreToTSeconds: number, rpoMs?: number, images?: ImageFigures }): void {
  const { labels, record, latest, at, rpoMs = RPO_MS, images } = drill
  t.diagnostic(`figures ${JSON.stringify({
    ...labels,
    acknowledged: record.acknowledged,
    rpoBoundSeconds: rpoMs / 1000,
    acknowledgedBeforeRpoBound: latest.acknowledgedBeforeRpo,
    lostBeforeRpoBound: latest.missing,
    lostInAll: latest.lost,
    rpoSeconds: latest.rpoMs === undefined ? 'nothing acknowledged is missing' : latest.rpoMs / 1000,
    restoreSeconds: drill.restoreSeconds,
    pitrRowsBack: at.victimsBack,
    sentAfterT: at.startedAfter,
    sentAfterTPresent: at.presentAfter,
    restoreToTSeconds: drill.restoreToTSeconds,
    ...(images === undefined ? {} : { imagesAcknowledged: record.images.length, imagesBeforeRpoBound: images.acknowledgedBeforeRpo, imagesMissing: images.missing, imagesDangling: images.dangling })
  })}`)
  for (const example of latest.examples) t.diagnostic(`missing: ${example}`)
  // The figures ride in the message too: a long run's tail keeps the failure's line, not the diagnostics.
  assert.equal(latest.missing, 0, `every write acknowledged ${rpoMs} ms before the loss is restored (${latest.missing} missing, the oldest ${latest.rpoMs ?? 0} ms before the loss; ${JSON.stringify(labels)}; first: ${latest.examples[0] ?? 'none'})`)
  assert.equal(latest.deletedStillThere, 0, 'posts deleted before that are gone')
  assert.equal(at.victimsBack, VICTIMS, 'the restore to T brings back every post deleted after T')
  assert.ok(at.startedAfter > 0, 'writes were sent after T')
  assert.equal(at.presentAfter, 0, 'nothing sent after T is in the restore to T')
  assert.equal(at.missing, 0, `every write acknowledged ${RPO_MS} ms before T is in the restore to T`)
  if (images !== undefined) {
    assert.ok(images.acknowledgedBeforeRpo > 0, 'images were uploaded among the writes')
    assert.equal(images.missing, 0, `every image acknowledged ${rpoMs} ms before the loss is served whole after the restore`)
    assert.equal(images.dangling, 0, 'no image the restored database names is without its bytes')
  }
}
