import { Type } from '@sinclair/typebox'
import { named } from '../http/schemas.js'

export const SystemStatus = named('SystemStatus', Type.Object({
  version: Type.String({ description: 'The service\'s version (package.json).', examples: ['0.1.0'] }),
  database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'The database this instance writes to.' }),
  backup: Type.Object({
    enabled: Type.Boolean({ description: 'SQLite: whether BACKUP_URL replicates the database (Litestream). PostgreSQL: whether the server archives its WAL (archive_mode), the recipe\'s backups.' }),
    target: Type.Union([Type.String(), Type.Null()], { description: 'Where the copy goes, without credentials (a folder or s3://bucket/path); null when not the service\'s to say (PostgreSQL, or no backup).' }),
    lagSeconds: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'SQLite under replication: how long the replica has been missing a commit (0: it holds every commit). Null elsewhere.' }),
    lastError: Type.Union([Type.String(), Type.Null()], { description: 'Why the copy is failing now, or null while it succeeds (PostgreSQL: a WAL segment whose archiving failed after the last one archived).' })
  }, { additionalProperties: false }),
  mail: Type.Object({
    queued: Type.Integer({ minimum: 0, description: 'Mails waiting to be sent (or retried).' }),
    failed: Type.Integer({ minimum: 0, description: 'Mails given up on after their attempts (kept until pruned).' })
  }, { additionalProperties: false }),
  webhooks: Type.Object({
    failingEndpoints: Type.Integer({ minimum: 0, description: 'Webhook endpoints whose deliveries are failing now, or that were disabled for failing.' })
  }, { additionalProperties: false })
}, {
  additionalProperties: false,
  description: 'The state of the service as an operator checks it (GET /v1/system).',
  examples: [{ version: '0.1.0', database: 'sqlite', backup: { enabled: true, target: 's3://backups/app', lagSeconds: 0, lastError: null }, mail: { queued: 0, failed: 1 }, webhooks: { failingEndpoints: 0 } }]
}))
