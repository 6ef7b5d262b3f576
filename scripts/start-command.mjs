// How `npm start` runs the service: the Node.js flags and the entry point of package.json's
// start script (`node [flags…] dist/server.js`). The benchmark and `npm run cluster` start the
// service from this, so the flags an operator gets from `npm start` are the ones measured and
// tested, written once. Plain JavaScript so that node runs it without a build;
// scripts/start-command.d.mts types it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export function startCommand (root) {
  const script = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start
  const [node, ...rest] = script.trim().split(/\s+/)
  const entry = rest.pop()
  if (node !== 'node' || entry === undefined || rest.some((word) => !word.startsWith('--'))) {
    throw new Error(`package.json's start script is not \`node [--flag…] entry.js\`: ${script}`)
  }
  return { flags: rest, entry }
}
