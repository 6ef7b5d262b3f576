// How `npm start` runs the service: the Node.js flags and the entry point of package.json's
// start script (`node [flags…] dist/server.js`). The benchmark, `npm run cluster` and the tests
// that run the server as a process start it from here, so the flags an operator gets from
// `npm start` are the ones measured and tested, written once. Plain JavaScript so that node runs
// it without a build; scripts/start-command.d.mts types it.
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

// The repository, whose package.json and entry points these are.
const ROOT = resolve(import.meta.dirname, '..')

/**
 * The arguments for `node` that start the service as `npm start` does: the script's flags, then
 * its built entry point, or with `fromSource` the TypeScript source through tsx (for runs that
 * spare the build).
 */
export function serviceArguments ({ fromSource = false } = {}) {
  const script = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start
  const [node, ...flags] = script.trim().split(/\s+/)
  const entry = flags.pop()
  if (node !== 'node' || entry === undefined || flags.some((word) => !word.startsWith('--'))) {
    throw new Error(`package.json's start script is not \`node [--flag…] entry.js\`: ${script}`)
  }
  return [...flags, ...(fromSource ? ['--import', 'tsx', join(ROOT, 'src/server.ts')] : [join(ROOT, entry)])]
}
