import { readFileSync } from 'node:fs'

// The one place the service's name and version come from: package.json (two levels up from both
// src/service/ and dist/service/).
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string, version: string }

export const NAME = pkg.name
export const VERSION = pkg.version
