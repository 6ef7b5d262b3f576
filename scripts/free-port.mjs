// A free TCP port on the loopback interface, for a server started after this returns. Shared by
// everything that starts servers on ports of its own: `npm run cluster`, the benchmark, the
// system tests and .ci/run (`node scripts/free-port.mjs` prints one). Plain JavaScript so that
// node runs it without a build; scripts/free-port.d.mts types it.
//
// The port is chosen below the kernel's ephemeral range (ip_local_port_range), not by
// listen(0), which picks inside it: between this check and the server's own bind, any outgoing
// connection on the machine may be given an ephemeral port, and once etcd failed to start that
// way ("bind: address already in use", a port freePort had just returned). Ports below the range
// are never given to connections; a server of another process could still take one, so each
// is checked with a listener first, and this process never hands out the same port twice.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { pathToFileURL } from 'node:url'

/** The first port of the kernel's ephemeral range (Linux), or the IANA default elsewhere. */
function ephemeralStart () {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 49152
  } catch {
    return 49152
  }
}

const handedOut = new Set()

async function listensOn (port) {
  return await new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => { resolve(undefined) })
    server.listen(port, '127.0.0.1', () => {
      const chosen = server.address().port
      server.close(() => { resolve(chosen) })
    })
  })
}

export async function freePort () {
  const high = ephemeralStart() - 1
  const low = Math.max(10_000, high - 10_000)
  for (let tries = 0; high > low && tries < 200; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1))
    if (handedOut.has(port) || await listensOn(port) === undefined) continue
    handedOut.add(port)
    return port
  }
  // No room below the range (a machine configured so): the kernel's choice, race and all.
  const port = await listensOn(0)
  if (port === undefined) throw new Error('no free port on 127.0.0.1')
  return port
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(await freePort())
}
