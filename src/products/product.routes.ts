import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

export const productRoutes: FastifyPluginAsyncTypebox = async () => {}
