import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

// The browser of the browser tests: Debian's Chromium, driven by playwright-core (no browser is
// downloaded). Without it a test is skipped on a developer's machine and fails in CI.

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
export const chromiumMissing = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium)`
/** A browser test's `skip`: only outside CI. */
export const skipWithoutChromium = chromiumMissing !== undefined && process.env.CI === undefined ? chromiumMissing : false

/** Chromium, headless, with nothing of its own going to the network. */
export async function launchChromium (): Promise<Browser> {
  if (chromiumMissing !== undefined) throw new Error(chromiumMissing)
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
}
