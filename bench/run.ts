// `npm run bench`: runs every bench/*.bench.ts in turn (one process each, so they don't disturb
// each other). Each benchmark measures its own baseline in the same run and prints ratios.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const only = process.argv.slice(2)
const files = readdirSync('bench').filter((f) => f.endsWith('.bench.ts')).sort()
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
let failed = false
for (const file of files) {
  console.log(`\n=== ${file} ===`)
  const result = spawnSync(process.execPath, ['--import', 'tsx', join('bench', file)], { stdio: 'inherit' })
  if (result.status !== 0) failed = true
}
process.exit(failed ? 1 : 0)
