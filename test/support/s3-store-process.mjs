// The S3 store of the backups' tests (s3-store.ts) as a process of its own: fauxqs with the
// options given as JSON in argv[2]; prints `ready` once it listens, stops on SIGTERM.
//
// One fix is applied as fauxqs is loaded: its CompleteMultipartUpload reads each part's ETag
// decoding only the named XML entities (&quot;), while Go's encoding/xml, which Litestream's
// AWS SDK uses, writes the quotes around an ETag as the numeric reference &#34;. Every part
// then looks unknown (InvalidPart), so an upload over 5 MiB (a multipart one, made when a
// second's WAL outgrows that) always failed. S3 itself decodes any XML character reference.
import { registerHooks } from 'node:module'

const MULTIPART = '/fauxqs/dist/s3/actions/completeMultipartUpload.js'
const NAMED_ONLY = '.replaceAll("&apos;", "\'");'
registerHooks({
  load (url, context, nextLoad) {
    const loaded = nextLoad(url, context)
    if (!url.endsWith(MULTIPART)) return loaded
    const source = String(loaded.source)
    if (!source.includes(NAMED_ONLY)) throw new Error(`fauxqs changed: ${MULTIPART} no longer reads ETags as this fix expects; check whether the fix is still needed`)
    return { ...loaded, source: source.replace(NAMED_ONLY, '.replaceAll("&apos;", "\'").replace(/&#(\\d+);/g, (_, code) => String.fromCharCode(Number(code)));') }
  }
})

const { startFauxqs } = await import('fauxqs')
const server = await startFauxqs(JSON.parse(process.argv[2]))
process.once('SIGTERM', () => { server.stop().then(() => process.exit(0), () => process.exit(1)) })
process.stdout.write('ready\n')
