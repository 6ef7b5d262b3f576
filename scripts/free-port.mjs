// A free TCP port on the loopback interface: the kernel picks one for a listener that is closed
// at once. Shared by everything that starts servers on ports of its own: `npm run cluster`, the
// benchmark, the system tests and .ci/run (`node scripts/free-port.mjs` prints one). Plain
// JavaScript so that node runs it without a build; scripts/free-port.d.mts types it.
import { createServer } from 'node:net'
import { pathToFileURL } from 'node:url'

export async function freePort () {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => { resolve(port) })
    })
  })
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(await freePort())
}
