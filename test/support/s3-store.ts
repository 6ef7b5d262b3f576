import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import S3rver from '@20minutes/s3rver'
import { freePort } from '../../scripts/free-port.mjs'

// S3 API servers on loopback, for the tests of backups and of stored files.
//
// - fauxqs (s3-store-process.mjs, with one fix to its multipart uploads) stores the replicas of the drills and the fault tests: it serves every call Litestream
//   makes (listing with a delimiter, uploads, multi-object deletes, downloads), keeps its objects
//   in a folder across a stop and a start on the same port (the store going away and coming
//   back), and answers an unknown bucket with S3's NoSuchBucket. It accepts any credentials.
// - s3rver (the maintained fork, @20minutes/s3rver) checks SigV4 signatures against its one
//   account, so wrong credentials are refused as S3 refuses them (InvalidAccessKeyId,
//   SignatureDoesNotMatch). It cannot hold a Litestream replica: its listing with a delimiter
//   leaves out the common prefixes of keys two levels down, which is how Litestream finds its
//   generations, so a restore from it would find nothing.

export const BUCKET = 'backups'

export interface S3Store {
  /** The endpoint, as AWS_ENDPOINT_URL_S3 takes it. */
  endpoint: string
  /** The credentials this store takes (any, for fauxqs). */
  credentials: { AWS_ACCESS_KEY_ID: string, AWS_SECRET_ACCESS_KEY: string }
  /** The variables a service or a restore needs to reach the store. */
  env: Record<string, string>
  /** Stops answering (the port is closed); the objects are kept. */
  stop: () => Promise<void>
  /** Answers again on the same port, with the objects it had. */
  start: () => Promise<void>
  /** Stops it and deletes its objects. */
  remove: () => Promise<void>
}

/**
 * A store of fauxqs with the bucket `backups`, on a free loopback port, in a process of its own
 * (as a store is: the test's own load and waits never slow it down), stopped by its pid.
 */
export async function startS3Store (): Promise<S3Store> {
  const dir = mkdtempSync(join(tmpdir(), 'api-s3-store-'))
  const port = await freePort()
  let server: ChildProcess | undefined
  const credentials = { AWS_ACCESS_KEY_ID: 'drill-key', AWS_SECRET_ACCESS_KEY: 'drill-secret' }
  const endpoint = `http://127.0.0.1:${port}`
  const options = JSON.stringify({ port, host: '127.0.0.1', logger: false, dataDir: dir, init: { buckets: [BUCKET] } })
  const store: S3Store = {
    endpoint,
    credentials,
    env: { AWS_ENDPOINT_URL_S3: endpoint, ...credentials },
    start: async () => {
      const child = spawn(process.execPath, [join(import.meta.dirname, 's3-store-process.mjs'), options], { stdio: ['ignore', 'pipe', 'inherit'] })
      server = child
      let out = ''
      child.stdout!.setEncoding('utf8')
      while (!out.includes('ready\n')) {
        const [chunk] = await Promise.race([once(child.stdout!, 'data'), once(child, 'exit').then(() => { throw new Error(`the S3 store exited: ${out}`) })]) as [string]
        out += chunk
      }
    },
    stop: async () => {
      const child = server
      server = undefined
      if (child === undefined || child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      await exited
    },
    remove: async () => {
      await store.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
  await store.start()
  return store
}

/** An s3rver with the bucket `backups`, taking only its own key and secret (S3RVER / S3RVER). */
export async function startSigningS3Store (): Promise<S3Store> {
  const dir = mkdtempSync(join(tmpdir(), 'api-s3rver-'))
  const port = await freePort()
  const server = new S3rver({ port, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: [{ name: BUCKET }] })
  const credentials = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' }
  const endpoint = `http://127.0.0.1:${port}`
  const store: S3Store = {
    endpoint,
    credentials,
    env: { AWS_ENDPOINT_URL_S3: endpoint, ...credentials },
    start: async () => { throw new Error('this store is started once') },
    stop: async () => { throw new Error('this store is only removed') },
    remove: async () => {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
  await server.run()
  return store
}
