import { readFileSync } from 'node:fs'

// The one place the service's name and version come from: package.json (one level up from both
// src/ and dist/). Anything may name the version (the OpenAPI document, the webhooks' User-Agent),
// so it stands on the ground floor, importing nothing of the service.
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string, version: string }

export const NAME = pkg.name
export const VERSION = pkg.version
