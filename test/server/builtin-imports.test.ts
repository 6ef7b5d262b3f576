import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

// An ES module import of node:http or node:https builds the module's namespace, which reads every
// export: their `WebSocket` getter loads the runtime's bundled undici (about 2.3 MiB of heap and
// 13 MiB resident in every process), which the service never uses. Types may be imported; values
// come from process.getBuiltinModule.

function sources (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

test('no source file imports a value from node:http or node:https as an ES module', () => {
  const offenders = sources('src').filter((file) => {
    const text = readFileSync(file, 'utf8')
    // Each import statement from its line's `import` to its `from '…'` (one may span lines).
    return [...text.matchAll(/^import\s[^]*?\sfrom\s+['"]([^'"]+)['"]/gm)]
      .some(([statement, from]) => /^node:https?$/.test(from!) && !statement.startsWith('import type '))
  })
  assert.deepEqual(offenders, [])
})

test('importing node:http as an ES module does load undici (the reason for the rule above)', async () => {
  const { execFileSync } = await import('node:child_process')
  const loaded = (code: string): string => execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 30_000 }).trim()
  const probe = "console.log(process.moduleLoadList.some((m) => m.includes('undici')))"
  assert.equal(loaded(`await import('node:http'); ${probe}`), 'true')
  assert.equal(loaded(`process.getBuiltinModule('node:http').createServer; ${probe}`), 'false')
})
