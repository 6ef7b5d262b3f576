import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { TestUser } from '../helper.js'

// Shop fixtures shared by the product and order tests (not a test file itself).

export interface ProductJson {
  id: number
  name: string
  price: number
  category: string
  stock: number
  onSale: boolean
  createdAt: string
  updatedAt: string
}

export interface OrderJson {
  id: number
  userId: number
  productId: number
  quantity: number
  totalPrice: number
  status: string
  createdAt: string
  updatedAt: string
}

export const PRODUCT_KEYS = ['category', 'createdAt', 'id', 'images', 'name', 'onSale', 'price', 'stock', 'updatedAt']
export const ORDER_KEYS = ['createdAt', 'id', 'productId', 'quantity', 'status', 'totalPrice', 'updatedAt', 'userId']

export function validProduct (fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'Paper notebook', price: 1500, category: 'BOOK', stock: 10, ...fields }
}

/** Creates a product as the admin; asserts 201. */
export async function createProduct (app: FastifyInstance, admin: TestUser, fields: Record<string, unknown> = {}): Promise<ProductJson> {
  const res = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct(fields) })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

export async function readProduct (app: FastifyInstance, id: number): Promise<ProductJson> {
  const res = await app.inject({ method: 'GET', url: `/v1/products/${id}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

export async function stockOf (app: FastifyInstance, id: number): Promise<number> {
  return (await readProduct(app, id)).stock
}

export async function postOrder (app: FastifyInstance, user: TestUser | undefined, payload: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: '/v1/orders', headers: { ...user?.auth, ...headers }, payload: payload as object })
}

/** Places an order; asserts 201. */
export async function placeOrder (app: FastifyInstance, user: TestUser, productId: number, quantity = 1): Promise<OrderJson> {
  const res = await postOrder(app, user, { productId, quantity })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

export async function patchOrder (app: FastifyInstance, user: TestUser | undefined, id: number | string, payload: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'PATCH', url: `/v1/orders/${id}`, headers: { ...user?.auth, ...headers }, payload: payload as object })
}

/** Ids a path must refuse with 400 VALIDATION_ERROR naming `id`. */
export const BAD_IDS = ['0', '-1', 'abc', '1.5', '9223372036854775808', '01', '1e3', '%20']

export const GENERIC_FORBIDDEN = 'You do not have permission to perform this action.'
