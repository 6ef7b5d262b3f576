import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { withoutVerdict } from '../../scripts/tap-report.mjs'

// What `npm test` (scripts/test.mjs) relies on to count honestly and never hang: a test started
// with no verdict is found in the TAP report, and a test file whose process outlives its tests is
// failed by test/lingering.mjs, naming what holds it, while one that lets go exits at once.

const LINGERING = join(import.meta.dirname, '..', 'lingering.mjs')

describe('the TAP report read for tests without a verdict', () => {
  test('a complete report has none; a cut one names every test started and not ended, inner ones first', () => {
    const complete = ['TAP version 13', '# Subtest: A', '    # Subtest: a1', '    ok 1 - a1', '      ---', '      duration_ms: 1', '      ...', 'ok 1 - A', '# Subtest: B \\# with a hash', 'ok 2 - B \\# with a hash # SKIP not here', '# Subtest: C', 'not ok 3 - C # TODO', '# tests 2'].join('\n')
    assert.deepEqual(withoutVerdict(complete), [])
    const cut = ['# Subtest: A', '    # Subtest: a1', '    ok 1 - a1', '    # Subtest: a2', 'ok 1 - A', '# Subtest: B', '    # Subtest: b1'].join('\n')
    assert.deepEqual(withoutVerdict(cut), ['a2', 'b1', 'B'])
  })
})

describe('a test file whose process outlives its tests', { timeout: 60_000 }, () => {
  async function run (body: string): Promise<{ code: number | null, output: string, ms: number }> {
    const dir = mkdtempSync(join(tmpdir(), 'api-lingering-'))
    try {
      const file = join(dir, 'fixture.test.mjs')
      writeFileSync(file, `import { test } from 'node:test'\n${body}\n`)
      const started = Date.now()
      const child = spawn(process.execPath, ['--import', LINGERING, '--test', '--test-reporter=tap', file], {
        env: { PATH: process.env.PATH ?? '', TEST_LINGER_LIMIT_MS: '1000' }, stdio: ['ignore', 'pipe', 'pipe']
      })
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
      child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
      const [code] = await once(child, 'exit') as [number | null]
      return { code, output, ms: Date.now() - started }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }

  test('one that holds a timer fails once its tests have ended that long, naming what holds it', async () => {
    const { code, output } = await run("test('passes, but leaves a timer', () => { setInterval(() => {}, 60_000) })")
    assert.notEqual(code, 0, output)
    assert.match(output, /ok 1 - passes, but leaves a timer/)
    assert.match(output, /its tests ended 1 s ago, but its process still runs, held by: .*Timeout/)
  })

  test('one that lets go of everything ends with its tests, passing', async () => {
    const { code, output } = await run("test('passes and cleans up', async (t) => { const timer = setInterval(() => {}, 60_000); t.after(() => { clearInterval(timer) }) })")
    assert.equal(code, 0, output)
    assert.doesNotMatch(output, /still runs/)
  })
})
