import type { RestoredPostgres } from './barman.mjs'

/** What is missing for object-storage backups here; undefined when nothing is. */
export function cloudMissing (): string | undefined
export function parseCloudUrl (url: string | undefined): string
export function archiveParameters (options: { url: string, timeoutSeconds?: number, env?: Record<string, string | undefined> }): Record<string, string>
export function cloudBackup (options: { url: string, port: number, password: string, home: string }): { id: string | undefined, seconds: number }
export function cloudBackups (url: string, home: string): Array<{ id: string, end: number }>
export function restoreFromCloud (options: { url: string, output: string, port: number, at: Date | undefined, bin: string }): Promise<RestoredPostgres>
