import sharp from 'sharp'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { ensureAdmin } from '../../src/users/admin-bootstrap.js'
import { createUser, tokenOf, uniqueEmail, type TestUser } from '../helper.js'
import type { FuzzApp } from './fuzz-app.js'

// The resources the fuzzer addresses: two users and the admin (the start-up admin of
// ADMIN_EMAIL / ADMIN_PASSWORD), a post each, products in three states and an order each, and
// an image on alice's post and one on the product on sale.
// Generated requests name them by slot ("alice's post"), resolved to a real id when the request
// is sent; whatever a request deleted or changed is made again before the next one.

export type Who = 'alice' | 'bob' | 'admin'
export const PEOPLE: Who[] = ['alice', 'bob', 'admin']
export type Author = 'alice' | 'bob'
export type ProductState = 'onSale' | 'offSale' | 'soldOut'
type SlotKind = 'userId' | 'postId' | 'productId' | 'orderId' | 'endpointId' | 'deliveryId' | 'fileId' | 'email' | 'password'
/** The images of the world: one on alice's post, one on the product on sale. */
type ImageOwner = 'alicePost' | 'onSale'

/** A value chosen by name at generation time and read from the world when the request is sent. */
export class Slot {
  readonly kind: SlotKind
  readonly name: string
  constructor (kind: SlotKind, name: string) { this.kind = kind; this.name = name }
  toJSON (): string { return `<${this.name}'s ${this.kind}>` }
}

export const SLOTS: Record<SlotKind, Slot[]> = {
  userId: PEOPLE.map((w) => new Slot('userId', w)),
  postId: ['alice', 'bob'].map((w) => new Slot('postId', w)),
  productId: ['onSale', 'offSale', 'soldOut'].map((s) => new Slot('productId', s)),
  orderId: ['alice', 'bob'].map((w) => new Slot('orderId', w)),
  endpointId: ['alice', 'bob'].map((w) => new Slot('endpointId', w)),
  deliveryId: ['alice', 'bob'].map((w) => new Slot('deliveryId', w)),
  fileId: ['alicePost', 'onSale'].map((o) => new Slot('fileId', o)),
  email: PEOPLE.map((w) => new Slot('email', w)),
  password: PEOPLE.map((w) => new Slot('password', w))
}

export class World {
  users = {} as Record<Who, TestUser>
  posts = {} as Record<Author, bigint>
  products = {} as Record<ProductState, bigint>
  orders = {} as Record<Author, bigint>
  /** A webhook endpoint each (to a loopback port nothing answers on), and its ping's delivery. */
  endpoints = {} as Record<Author, bigint>
  deliveries = {} as Record<Author, bigint>
  images = {} as Record<ImageOwner, bigint>
  private readonly stale = new Set<string>()

  private readonly fuzz: FuzzApp
  private constructor (fuzz: FuzzApp) { this.fuzz = fuzz }

  static async create (fuzz: FuzzApp): Promise<World> {
    const world = new World(fuzz)
    for (const who of PEOPLE) world.stale.add(`user:${who}`)
    for (const state of ['onSale', 'offSale', 'soldOut']) world.stale.add(`product:${state}`)
    await world.ensure()
    return world
  }

  private async inject (method: string, url: string, who: Who | undefined, payload?: unknown): Promise<LightMyRequestResponse> {
    const headers = who === undefined ? {} : this.users[who].auth
    return await this.fuzz.app.inject({ method: method as 'POST', url, headers, payload: payload as object })
  }

  /** Makes again whatever the last requests deleted, changed or logged out. */
  async ensure (): Promise<void> {
    for (const who of PEOPLE) {
      if (this.stale.delete(`user:${who}`)) {
        await this.makeUser(who)
        if (who !== 'admin') { this.stale.add(`post:${who}`); this.stale.add(`order:${who}`); this.stale.add(`endpoint:${who}`) }
      }
      if (this.stale.delete(`token:${who}`)) {
        const token = await tokenOf(this.fuzz.app, this.users[who].email, this.users[who].password)
        this.users[who] = { ...this.users[who], token, auth: { authorization: `Bearer ${token}` } }
      }
    }
    for (const state of ['onSale', 'offSale', 'soldOut'] as const) {
      if (!this.stale.delete(`product:${state}`)) continue
      if (state === 'onSale') this.stale.add('image:onSale')
      const body = { name: `fuzz ${state}`, price: 250, category: 'BOOK', stock: state === 'soldOut' ? 0 : 1_000_000, onSale: state !== 'offSale' }
      const res = await this.inject('POST', '/v1/products', 'admin', body)
      assert.equal(res.statusCode, 201, res.body)
      this.products[state] = BigInt(res.json().id)
    }
    for (const who of ['alice', 'bob'] as const) {
      if (this.stale.delete(`post:${who}`)) {
        const res = await this.inject('POST', '/v1/posts', who, { title: `${who}'s post`, content: 'Written before the fuzzing.' })
        assert.equal(res.statusCode, 201, res.body)
        this.posts[who] = BigInt(res.json().id)
        if (who === 'alice') this.stale.add('image:alicePost')
      }
      if (this.stale.delete(`endpoint:${who}`)) {
        const res = await this.inject('POST', '/v1/webhook-endpoints', who, { url: 'http://127.0.0.1:9/fuzz', events: ['order.shipped'] })
        assert.equal(res.statusCode, 201, res.body)
        this.endpoints[who] = BigInt(res.json().id)
        const ping = await this.inject('POST', `/v1/webhook-endpoints/${res.json().id}/ping`, who)
        assert.equal(ping.statusCode, 202, ping.body)
        this.deliveries[who] = BigInt(ping.json().id)
      }
      if (this.stale.delete(`order:${who}`)) {
        const res = await this.inject('POST', '/v1/orders', who, { productId: Number(this.products.onSale), quantity: 1 })
        assert.equal(res.statusCode, 201, res.body)
        this.orders[who] = BigInt(res.json().id)
      }
    }
    await this.makeImages()
  }

  /** The world's picture: distinct bytes for each image made, so that removing one never touches another's. */
  private pictures = 0
  private async makeImages (): Promise<void> {
    for (const [owner, url, who] of [['alicePost', `/v1/posts/${this.posts.alice}/images`, 'alice'], ['onSale', `/v1/products/${this.products.onSale}/images`, 'admin']] as const) {
      if (!this.stale.delete(`image:${owner}`)) continue
      const picture = await sharp({ create: { width: 16, height: 16, channels: 3, background: { r: this.pictures++ % 256, g: 30, b: 60 } } }).png().toBuffer()
      const res = await this.fuzz.app.inject({ method: 'POST', url, headers: { ...this.users[who].auth, 'content-type': 'image/png' }, payload: picture })
      assert.equal(res.statusCode, 201, res.body)
      this.images[owner] = BigInt(res.json().id)
    }
  }

  private async makeUser (who: Who): Promise<void> {
    const { app, config } = this.fuzz
    if (who !== 'admin') {
      this.users[who] = { ...await createUser(app, { email: uniqueEmail(who), name: who, password: `${who} password 1` }) }
      return
    }
    // The start-up path: the ADMIN_* settings make (or restore) the admin.
    await ensureAdmin(app.db, config.adminEmail!, config.adminPassword!)
    const token = await tokenOf(app, config.adminEmail!, config.adminPassword!)
    const me = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${token}` } })
    assert.equal(me.json().user.role, 'ADMIN')
    this.users.admin = {
      id: me.json().user.id, email: config.adminEmail!, name: me.json().user.name, password: config.adminPassword!, token, auth: { authorization: `Bearer ${token}` }
    }
  }

  /** The current value of a slot. */
  value (slot: Slot): string | bigint {
    switch (slot.kind) {
      case 'userId': return BigInt(this.users[slot.name as Who].id)
      case 'postId': return this.posts[slot.name as Author]
      case 'productId': return this.products[slot.name as ProductState]
      case 'orderId': return this.orders[slot.name as Author]
      case 'endpointId': return this.endpoints[slot.name as Author]
      case 'deliveryId': return this.deliveries[slot.name as Author]
      case 'fileId': return this.images[slot.name as ImageOwner]
      case 'email': return this.users[slot.name as Who].email
      case 'password': return this.users[slot.name as Who].password
    }
  }

  /** `value` with every slot replaced: ids as JSON numbers in a body, as decimal text elsewhere. */
  resolve (value: unknown, place: 'body' | 'text'): unknown {
    if (value instanceof Slot) {
      const v = this.value(value)
      return typeof v === 'bigint' ? (place === 'body' ? Number(v) : v.toString()) : v
    }
    if (Array.isArray(value)) return value.map((v) => this.resolve(v, place))
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.resolve(v, place)]))
    }
    return value
  }

  /** The world's name for a user id, if it is one of ours. */
  private whoHas (id: string | undefined): Who | undefined {
    return PEOPLE.find((w) => String(this.users[w].id) === id)
  }

  /** Notes what a successful request changed, so `ensure` makes it again. */
  observe (opKey: string, params: Record<string, string>, body: unknown, authorization: string | undefined, res: LightMyRequestResponse): void {
    if (res.statusCode >= 300) return
    const id = params.id
    const by = PEOPLE.find((w) => this.users[w].auth.authorization === authorization)
    switch (opKey) {
      case 'DELETE /v1/users/{id}': { const who = this.whoHas(id); if (who !== undefined) this.stale.add(`user:${who}`); break }
      case 'PUT /v1/users/{id}': { const who = this.whoHas(id); if (who !== undefined) this.users[who] = { ...this.users[who], email: res.json().email, name: res.json().name }; break }
      case 'PUT /v1/users/{id}/password': {
        const who = this.whoHas(id)
        if (who !== undefined) this.users[who] = { ...this.users[who], password: (body as { newPassword: string }).newPassword }
        break
      }
      case 'DELETE /v1/sessions/current': if (by !== undefined) this.stale.add(`token:${by}`); break
      case 'DELETE /v1/users/{id}/sessions': { const who = this.whoHas(id); if (who !== undefined) this.stale.add(`token:${who}`); break }
      case 'PUT /v1/posts/{id}': case 'PATCH /v1/posts/{id}': case 'DELETE /v1/posts/{id}':
        for (const who of ['alice', 'bob'] as const) if (String(this.posts[who]) === id) this.stale.add(`post:${who}`)
        break
      case 'PATCH /v1/products/{id}':
        for (const state of ['onSale', 'offSale', 'soldOut'] as const) if (String(this.products[state]) === id) this.stale.add(`product:${state}`)
        break
      case 'PATCH /v1/webhook-endpoints/{id}': case 'DELETE /v1/webhook-endpoints/{id}':
        for (const who of ['alice', 'bob'] as const) if (String(this.endpoints[who]) === id) this.stale.add(`endpoint:${who}`)
        break
      case 'DELETE /v1/posts/{id}/images/{imageId}': case 'DELETE /v1/products/{id}/images/{imageId}':
        for (const owner of ['alicePost', 'onSale'] as const) if (String(this.images[owner]) === params.imageId) this.stale.add(`image:${owner}`)
        break
      case 'PATCH /v1/orders/{id}':
        for (const who of ['alice', 'bob'] as const) if (String(this.orders[who]) === id) this.stale.add(`order:${who}`)
        break
    }
  }
}
