import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

export const postRoutes: FastifyPluginAsyncTypebox = async () => {}
