// The floor of a file read (bench/files.bench.ts): Fastify with @fastify/static serving the
// storage folder as it is, nothing else: no lookup of a row, no headers of our own, no logging.
//   FLOOR_ROOT=/path/to/files PORT=… node bench/floor-static.mjs
import Fastify from 'fastify'
import fastifyStatic from '@fastify/static'

const app = Fastify({ logger: false })
await app.register(fastifyStatic, { root: process.env.FLOOR_ROOT, serve: true })
app.get('/health/ready', async () => ({ status: 'ok' }))
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
