import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

export const orderRoutes: FastifyPluginAsyncTypebox = async () => {}
