import { useEffect, useState } from 'preact/hooks'
import type { components } from '../../client/schema.js'
import { api, problemOf, type Problem } from './api.js'
import { ProblemText } from './problem.js'

type SystemStatus = components['schemas']['SystemStatus']

/** GET /v1/system: the version, the database, the backup, mail and webhooks. */
export function SystemScreen () {
  const [status, setStatus] = useState<SystemStatus | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  useEffect(() => {
    void api.GET('/v1/system').then(({ data, error, response }) => {
      if (data !== undefined) setStatus(data)
      else setProblem(problemOf(error, response))
    }, () => { setProblem(problemOf(undefined, undefined)) })
  }, [])
  return (
    <section aria-labelledby='system-title'>
      <h1 id='system-title'>System</h1>
      <ProblemText problem={problem} />
      {status === undefined && problem === undefined && <p aria-live='polite'>Loading…</p>}
      {status !== undefined && (
        <dl class='facts'>
          <dt>Version</dt><dd>{status.version}</dd>
          <dt>Database</dt><dd>{status.database === 'sqlite' ? 'SQLite' : 'PostgreSQL'}</dd>
          <dt>Backup</dt><dd>{status.backup.enabled ? `on${status.backup.target === null ? '' : `, to ${status.backup.target}`}` : 'off'}</dd>
          <dt>Replication lag</dt><dd>{status.backup.lagSeconds === null ? 'not measured here' : `${status.backup.lagSeconds.toFixed(1)} s`}</dd>
          <dt>Last backup error</dt><dd>{status.backup.lastError ?? 'none'}</dd>
          <dt>Mail queued</dt><dd>{status.mail.queued}</dd>
          <dt>Mail failed</dt><dd>{status.mail.failed}</dd>
          <dt>Failing webhook endpoints</dt><dd>{status.webhooks.failingEndpoints}</dd>
        </dl>
      )}
    </section>
  )
}
