import type { ChildProcess } from 'node:child_process'
import type { Barman } from './barman.mjs'

/** One PostgreSQL node under Patroni (see ha-postgres.mjs). */
export interface HaNode {
  name: string
  home: string
  pgPort: number
  restPort: number
  /** Patroni's configuration file (also what `patronictl -c` reads). */
  config: string
  dataDir: string
  log: string
  patroni: ChildProcess
}

export interface HaPostgres {
  dir: string
  /** postgres://… through HAProxy: always the current primary. */
  url: string
  port: number
  nodes: HaNode[]
  etcd: ChildProcess
  haproxy: ChildProcess
  primary: () => Promise<HaNode | undefined>
  syncStandbys: () => Promise<HaNode[]>
  healthy: (ms?: number, standbys?: number) => Promise<number>
  postmasterPid: (node: HaNode) => number | undefined
  startNode: (node: HaNode) => void
  /** SQL as the superuser on one node (its Unix socket); psql's unaligned output. */
  sql: (node: HaNode, command: string) => string
  killNode: (node: HaNode) => Promise<void>
  /** Barman, when the cluster was started with backups. */
  barman?: Barman
  /** Base backups into object storage, when the cluster was started with cloudBackups. */
  cloud?: { url: string, backup: () => { id: string | undefined, seconds: number }, stop: () => void }
  stop: (options?: { remove?: boolean }) => Promise<void>
}

/** What is missing to run the HA recipe here, with the install command; undefined when nothing is. */
export function haMissing (): string | undefined
/** The newest PostgreSQL server binaries (PG_BIN, or under /usr/lib/postgresql); undefined when there are none. */
export function postgresBin (): string | undefined
export function startHaPostgres (options?: { nodes?: number, say?: (line: string) => void, backups?: { dir: string, intervalSeconds?: number }, cloudBackups?: { url: string, archiveTimeoutSeconds?: number, intervalSeconds?: number } }): Promise<HaPostgres>
