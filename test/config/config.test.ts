import { resolve } from 'node:path'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config/config.js'

describe('loadConfig', () => {
  test('defaults of the README', () => {
    assert.deepEqual(loadConfig({}), {
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: 'file:./data/app.db',
      secretKey: undefined,
      adminEmail: undefined,
      adminPassword: undefined,
      sessionTtlSeconds: 86400,
      reauthenticationSeconds: 600,
      bodyLimitBytes: 1048576,
      logLevel: 'info',
      corsOrigins: [],
      rateLimitPerMinute: 600,
      loginFailuresPerEmail: 10,
      loginFailuresPerClient: 100,
      loginFailuresPerAccount: 100,
      signupsPerClientPerHour: 20,
      metricsHost: '127.0.0.1',
      metricsPort: 9464,
      trustProxy: [],
      shutdownGraceMs: 5000,
      pgPreparedStatements: true,
      eventRetentionDays: 30,
      webhooks: {
        allowHosts: [],
        retryScheduleMs: [0, 5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000],
        timeoutMs: 15000,
        disableAfterMs: 432000000,
        pollMs: 1000
      },
      backup: undefined,
      publicUrl: 'http://127.0.0.1:3000',
      appUrl: undefined,
      requireEmailVerification: false,
      mail: {
        smtpUrl: undefined,
        from: 'no-reply@localhost',
        dir: 'data/mail',
        retryScheduleMs: [0, 10000, 60000, 300000, 900000, 1800000, 3600000, 7200000, 14400000, 28800000, 28800000],
        pollMs: 1000,
        perAddressPerMinute: 1,
        perAddressPerHour: 5,
        tokenFailuresPerClientPerMinute: 20
      },
      oidc: { providers: [], timeoutSeconds: 10 },
      files: {
        storage: { kind: 'folder', dir: resolve('data/files'), url: 'file:data/files' },
        maxBytes: 10 * 1024 * 1024,
        aws: { AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined, AWS_SESSION_TOKEN: undefined, AWS_REGION: undefined, AWS_DEFAULT_REGION: undefined, AWS_ENDPOINT_URL_S3: undefined, AWS_ENDPOINT_URL: undefined },
        storeTimeoutMs: 10_000
      }
    })
  })

  test('STORAGE_URL, FILE_MAX_BYTES and STORAGE_TIMEOUT_MS: a folder (relative or file:///absolute) or s3://bucket/prefix; credentials never in the URL; a bad value named', () => {
    assert.deepEqual(loadConfig({ STORAGE_URL: 'file:///var/lib/api/files' }).files.storage, { kind: 'folder', dir: '/var/lib/api/files', url: 'file:///var/lib/api/files' })
    assert.deepEqual(loadConfig({ STORAGE_URL: 's3://shop-files/images/' }).files.storage, { kind: 's3', bucket: 'shop-files', prefix: 'images', url: 's3://shop-files/images' })
    assert.deepEqual(loadConfig({ STORAGE_URL: 's3://shop-files' }).files.storage, { kind: 's3', bucket: 'shop-files', prefix: '', url: 's3://shop-files' })
    assert.equal(loadConfig({ FILE_MAX_BYTES: '2048' }).files.maxBytes, 2048)
    assert.equal(loadConfig({ AWS_REGION: 'eu-west-3' }).files.aws.AWS_REGION, 'eu-west-3')
    for (const [value, message] of [
      ['s3://KEY:hunter2@shop-files/x', /STORAGE_URL: an s3:\/\/ URL is s3:\/\/BUCKET\/PREFIX alone/],
      ['s3://a/x?region=eu', /STORAGE_URL: an s3:\/\/ URL is s3:\/\/BUCKET\/PREFIX alone/],
      ['s3://Not_A_Bucket/x', /STORAGE_URL: "Not_A_Bucket" is not an S3 bucket name/],
      ['file:', /STORAGE_URL: file: needs a folder/],
      ['file://host/x', /STORAGE_URL: "file:\/\/host\/x" names a host/],
      ['file:///var/%ZZ', /STORAGE_URL: "file:\/\/\/var\/%ZZ" is not valid percent-encoding/],
      ['ftp://user:pw@host/x', /STORAGE_URL: must be file:DIR or s3:\/\/BUCKET\/PREFIX, got "ftp:\/\/\*\*\*@host\/x"/]
    ] as const) {
      assert.throws(() => loadConfig({ STORAGE_URL: value }), (error: Error) => message.test(error.message) && !error.message.includes('hunter2') && !error.message.includes(':pw@'), value)
    }
    for (const value of ['1023', '10MB', '-1']) assert.throws(() => loadConfig({ FILE_MAX_BYTES: value }), /FILE_MAX_BYTES/, value)
    assert.equal(loadConfig({}).files.storeTimeoutMs, 10_000)
    assert.equal(loadConfig({ STORAGE_TIMEOUT_MS: '2500' }).files.storeTimeoutMs, 2500)
    for (const value of ['99', '600001', '5s']) assert.throws(() => loadConfig({ STORAGE_TIMEOUT_MS: value }), /STORAGE_TIMEOUT_MS/, value)
    // The same reading of a file: URL as BACKUP_URL's (config/file-url.ts).
    assert.throws(() => loadConfig({ BACKUP_URL: 'file:///var/%ZZ' }), /BACKUP_URL: "file:\/\/\/var\/%ZZ" is not valid percent-encoding/)
  })

  test('OIDC_PROVIDERS: providers as JSON, checked member by member; a bad one is named, its secret never repeated', () => {
    const gitlab = { id: 'gitlab', issuer: 'https://gitlab.com', clientId: 'app-1', clientSecret: 'topsecret', redirectUris: ['https://app.example/signed-in', 'http://localhost:5173/signed-in'] }
    const local = { id: 'dev_1', issuer: 'http://127.0.0.1:8080/realms/dev', clientId: 'c', clientSecret: 'topsecret', redirectUris: ['http://127.0.0.1:5173/cb?from=login'] }
    assert.deepEqual(loadConfig({ OIDC_PROVIDERS: JSON.stringify([gitlab, local]), OIDC_TIMEOUT_SECONDS: '3' }).oidc, { providers: [gitlab, local], timeoutSeconds: 3 })
    assert.deepEqual(loadConfig({ OIDC_PROVIDERS: ' ' }).oidc.providers, [])
    for (const value of [
      'not json',
      '{}',
      '[1]',
      JSON.stringify([{ ...gitlab, id: 'GitLab' }]),
      JSON.stringify([{ ...gitlab, id: '' }]),
      JSON.stringify([gitlab, gitlab]),
      JSON.stringify([{ ...gitlab, issuer: 'http://gitlab.com' }]),
      JSON.stringify([{ ...gitlab, issuer: 'https://gitlab.com/#x' }]),
      JSON.stringify([{ ...gitlab, issuer: 'https://gitlab.com/?x=1' }]),
      JSON.stringify([{ ...gitlab, issuer: 'gitlab.com' }]),
      JSON.stringify([{ ...gitlab, clientId: '' }]),
      JSON.stringify([{ ...gitlab, clientSecret: 42 }]),
      JSON.stringify([{ ...gitlab, redirectUris: [] }]),
      JSON.stringify([{ ...gitlab, redirectUris: ['http://app.example/cb'] }]),
      JSON.stringify([{ ...gitlab, redirectUris: ['https://app.example/cb#x'] }]),
      JSON.stringify([{ ...gitlab, scopes: ['openid'] }])
    ]) {
      assert.throws(() => loadConfig({ OIDC_PROVIDERS: value }), (error: Error) => error.message.startsWith('OIDC_PROVIDERS: ') && !error.message.includes('topsecret'), value)
    }
    assert.throws(() => loadConfig({ OIDC_TIMEOUT_SECONDS: '0' }), /^ConfigError: OIDC_TIMEOUT_SECONDS: |OIDC_TIMEOUT_SECONDS: /)
  })

  test('the mail and the links in it: SMTP_URL, MAIL_FROM, PUBLIC_URL and APP_URL', () => {
    const config = loadConfig({ SMTP_URL: 'smtps://mailer:s3cret@smtp.example:465', MAIL_FROM: 'Shop <no-reply@shop.example>', PUBLIC_URL: 'https://api.shop.example/', APP_URL: 'https://shop.example/account', REQUIRE_EMAIL_VERIFICATION: 'true' })
    assert.equal(config.mail.smtpUrl, 'smtps://mailer:s3cret@smtp.example:465')
    assert.equal(config.mail.from, 'Shop <no-reply@shop.example>')
    assert.equal(config.publicUrl, 'https://api.shop.example')
    assert.equal(config.appUrl, 'https://shop.example/account')
    assert.equal(config.requireEmailVerification, true)
    // An unspecified listen address is no address to link to.
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).publicUrl, 'http://localhost:8080')
    assert.equal(loadConfig({ HOST: '::1' }).publicUrl, 'http://[::1]:3000')
    for (const [env, variable] of [
      [{ SMTP_URL: 'http://smtp.example' }, 'SMTP_URL'],
      [{ SMTP_URL: 'smtp://user:topsecret@' }, 'SMTP_URL'],
      [{ MAIL_FROM: 'not an address' }, 'MAIL_FROM'],
      [{ MAIL_FROM: 'Shop <a@b.example' }, 'MAIL_FROM'],
      [{ PUBLIC_URL: 'ftp://api.example' }, 'PUBLIC_URL'],
      [{ APP_URL: 'https://app.example/?next=1' }, 'APP_URL'],
      [{ APP_URL: 'https://user:pw@app.example' }, 'APP_URL'],
      [{ MAIL_RETRY_SCHEDULE: '0,soon' }, 'MAIL_RETRY_SCHEDULE'],
      [{ MAIL_PER_ADDRESS_PER_MINUTE: '0' }, 'MAIL_PER_ADDRESS_PER_MINUTE'],
      [{ TOKEN_FAILURES_PER_CLIENT_PER_MINUTE: 'x' }, 'TOKEN_FAILURES_PER_CLIENT_PER_MINUTE'],
      [{ REQUIRE_EMAIL_VERIFICATION: 'yes' }, 'REQUIRE_EMAIL_VERIFICATION']
    ] as Array<[Record<string, string>, string]>) {
      assert.throws(() => loadConfig(env), (error: Error) => error.message.startsWith(`${variable}: `) && !error.message.includes('topsecret'), JSON.stringify(env))
    }
  })

  test('BACKUP_URL: a folder (relative, absolute or a file:/// URL) or an S3 bucket and path, with its defaults', () => {
    assert.deepEqual(loadConfig({ BACKUP_URL: 'file:/var/backups/api' }).backup,
      { target: { kind: 'file', dir: '/var/backups/api' }, snapshotIntervalSeconds: 3600, retentionSeconds: 86400 })
    assert.deepEqual(loadConfig({ BACKUP_URL: 'file:///var/backups/my%20api' }).backup?.target, { kind: 'file', dir: '/var/backups/my api' })
    assert.deepEqual(loadConfig({ BACKUP_URL: 'file:backups' }).backup?.target, { kind: 'file', dir: join(process.cwd(), 'backups') })
    assert.deepEqual(loadConfig({ BACKUP_URL: 's3://my-bucket/api/db/', BACKUP_SNAPSHOT_INTERVAL_SECONDS: '600', BACKUP_RETENTION_SECONDS: '604800' }).backup,
      { target: { kind: 's3', bucket: 'my-bucket', path: 'api/db' }, snapshotIntervalSeconds: 600, retentionSeconds: 604800 })
    assert.equal(loadConfig({ BACKUP_URL: 's3://my-bucket/db', AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000' }).backup?.target.kind, 's3')
    assert.equal(loadConfig({ BACKUP_URL: 's3://my-bucket/db', AWS_ENDPOINT_URL: 'https://account.r2.cloudflarestorage.com' }).backup?.target.kind, 's3')
  })

  test('SECRET_KEY: 32 bytes as 64 hexadecimal characters; a bad one is named, never repeated', () => {
    const hex = '00112233445566778899aabbccddeeff' + 'FFEEDDCCBBAA99887766554433221100'
    assert.deepEqual(loadConfig({ SECRET_KEY: hex }).secretKey, Buffer.from(hex, 'hex'))
    assert.equal(loadConfig({ SECRET_KEY: hex }).secretKey?.length, 32)
    assert.deepEqual(loadConfig({ SECRET_KEY: `${hex}\n` }).secretKey, Buffer.from(hex, 'hex'))
    assert.equal(loadConfig({ SECRET_KEY: '' }).secretKey, undefined)
    for (const value of [hex.slice(0, 62), `${hex}00`, `${hex.slice(0, 63)}g`, Buffer.from(hex, 'hex').toString('base64'), `0x${hex.slice(2)}`, 'topsecret']) {
      assert.throws(() => loadConfig({ SECRET_KEY: value }), (error: unknown) => {
        assert.ok(error instanceof ConfigError)
        assert.equal(error.variable, 'SECRET_KEY')
        assert.ok(error.message.startsWith('SECRET_KEY: '))
        assert.ok(!error.message.includes(value) && !error.message.includes('topsecret'), error.message)
        assert.doesNotMatch(error.message, /\n/)
        return true
      }, value)
    }
  })

  test('reads every variable', () => {
    const config = loadConfig({
      PORT: '0', HOST: '0.0.0.0', DATABASE_URL: 'postgres://u:p@db:5432/app', ADMIN_EMAIL: 'a@example.com', ADMIN_PASSWORD: 'password1',
      SESSION_TTL_SECONDS: '60', REAUTHENTICATION_SECONDS: '120', BODY_LIMIT_BYTES: '2048', LOG_LEVEL: 'debug', CORS_ORIGINS: 'https://a.example, http://localhost:5173',
      RATE_LIMIT_PER_MINUTE: '0', LOGIN_FAILURES_PER_EMAIL: '5', LOGIN_FAILURES_PER_CLIENT: '50',
      LOGIN_FAILURES_PER_ACCOUNT: '70', SIGNUPS_PER_CLIENT_PER_HOUR: '3', METRICS_HOST: '10.0.0.5', METRICS_PORT: '0',
      TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback', SHUTDOWN_GRACE_MS: '0', PG_PREPARED_STATEMENTS: 'false',
      EVENT_RETENTION_DAYS: '45', WEBHOOK_ALLOW_HOSTS: '127.0.0.1, hooks.internal,10.0.0.0/8', WEBHOOK_RETRY_SCHEDULE: '0,0.25,2',
      WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_DISABLE_AFTER_SECONDS: '60', WEBHOOK_POLL_MS: '50'
    })
    assert.equal(config.eventRetentionDays, 45)
    assert.deepEqual(config.webhooks, { allowHosts: ['127.0.0.1', 'hooks.internal', '10.0.0.0/8'], retryScheduleMs: [0, 250, 2000], timeoutMs: 2000, disableAfterMs: 60000, pollMs: 50 })
    assert.equal(config.pgPreparedStatements, false)
    assert.deepEqual(config.trustProxy, ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'loopback'])
    assert.equal(config.shutdownGraceMs, 0)
    assert.equal(config.port, 0)
    assert.equal(config.host, '0.0.0.0')
    assert.equal(config.databaseUrl, 'postgres://u:p@db:5432/app')
    assert.deepEqual(config.corsOrigins, ['https://a.example', 'http://localhost:5173'])
    assert.equal(config.rateLimitPerMinute, 0)
    assert.equal(config.loginFailuresPerEmail, 5)
    assert.equal(config.loginFailuresPerClient, 50)
    assert.equal(config.loginFailuresPerAccount, 70)
    assert.equal(config.signupsPerClientPerHour, 3)
    assert.equal(config.metricsHost, '10.0.0.5')
    assert.equal(config.metricsPort, 0)
    assert.equal(config.sessionTtlSeconds, 60)
    assert.equal(config.reauthenticationSeconds, 120)
    assert.equal(config.bodyLimitBytes, 2048)
  })

  const bad: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: 'eighty' }], ['PORT', { PORT: '70000' }], ['PORT', { PORT: '-1' }], ['PORT', { PORT: '80.5' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }], ['DATABASE_URL', { DATABASE_URL: 'file:' }], ['DATABASE_URL', { DATABASE_URL: 'postgres://' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }], ['SESSION_TTL_SECONDS', { SESSION_TTL_SECONDS: '0' }],
    ['REAUTHENTICATION_SECONDS', { REAUTHENTICATION_SECONDS: '0' }], ['REAUTHENTICATION_SECONDS', { REAUTHENTICATION_SECONDS: 'ten minutes' }],
    ['BODY_LIMIT_BYTES', { BODY_LIMIT_BYTES: '-5' }], ['CORS_ORIGINS', { CORS_ORIGINS: 'not an origin' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'https://ok.example/path' }],
    ['RATE_LIMIT_PER_MINUTE', { RATE_LIMIT_PER_MINUTE: '1.5' }], ['LOGIN_FAILURES_PER_EMAIL', { LOGIN_FAILURES_PER_EMAIL: 'x' }],
    ['LOGIN_FAILURES_PER_CLIENT', { LOGIN_FAILURES_PER_CLIENT: '0' }],
    ['LOGIN_FAILURES_PER_ACCOUNT', { LOGIN_FAILURES_PER_ACCOUNT: '0' }], ['SIGNUPS_PER_CLIENT_PER_HOUR', { SIGNUPS_PER_CLIENT_PER_HOUR: '-1' }],
    ['METRICS_PORT', { METRICS_PORT: '65536' }], ['RATE_LIMIT_PER_MINUTE', { RATE_LIMIT_PER_MINUTE: 'off' }],
    ['ADMIN_PASSWORD', { ADMIN_EMAIL: 'only-email@example.com' }], ['ADMIN_EMAIL', { ADMIN_PASSWORD: 'only password' }],
    ['ADMIN_PASSWORD', { ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'short' }],
    ['ADMIN_EMAIL', { ADMIN_EMAIL: 'not an e-mail', ADMIN_PASSWORD: 'long enough' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'proxy.example.com' }], ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.0/33' }],
    ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.1, 300.0.0.1' }], ['TRUST_PROXY', { TRUST_PROXY: '::1/129' }],
    ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.0/8/8' }], ['TRUST_PROXY', { TRUST_PROXY: 'true' }],
    ['SHUTDOWN_GRACE_MS', { SHUTDOWN_GRACE_MS: '5s' }], ['SHUTDOWN_GRACE_MS', { SHUTDOWN_GRACE_MS: '600001' }],
    ['PG_PREPARED_STATEMENTS', { PG_PREPARED_STATEMENTS: 'off' }], ['PG_PREPARED_STATEMENTS', { PG_PREPARED_STATEMENTS: 'TRUE' }],
    ['PG_PREPARED_STATEMENTS', { PG_PREPARED_STATEMENTS: '1' }],
    ['EVENT_RETENTION_DAYS', { EVENT_RETENTION_DAYS: '0' }], ['WEBHOOK_ALLOW_HOSTS', { WEBHOOK_ALLOW_HOSTS: '10.0.0.0/40' }],
    ['WEBHOOK_ALLOW_HOSTS', { WEBHOOK_ALLOW_HOSTS: 'http://example.com' }], ['WEBHOOK_RETRY_SCHEDULE', { WEBHOOK_RETRY_SCHEDULE: '0,5s' }],
    ['WEBHOOK_RETRY_SCHEDULE', { WEBHOOK_RETRY_SCHEDULE: '0,,5' }], ['WEBHOOK_RETRY_SCHEDULE', { WEBHOOK_RETRY_SCHEDULE: '-1' }],
    ['WEBHOOK_TIMEOUT_MS', { WEBHOOK_TIMEOUT_MS: '50' }], ['WEBHOOK_DISABLE_AFTER_SECONDS', { WEBHOOK_DISABLE_AFTER_SECONDS: '0' }],
    ['WEBHOOK_POLL_MS', { WEBHOOK_POLL_MS: 'fast' }],
    ['BACKUP_URL', { BACKUP_URL: 'ftp://backups.example.com/api' }], ['BACKUP_URL', { BACKUP_URL: '/var/backups' }],
    ['BACKUP_URL', { BACKUP_URL: 'file:' }], ['BACKUP_URL', { BACKUP_URL: 'file://host/dir' }],
    ['BACKUP_URL', { BACKUP_URL: 's3://My_Bucket/db' }], ['BACKUP_URL', { BACKUP_URL: 's3://bucket' }],
    ['BACKUP_URL', { BACKUP_URL: 'file:/var/backups', DATABASE_URL: 'postgres://u:p@db:5432/app' }],
    ['AWS_ENDPOINT_URL_S3', { BACKUP_URL: 's3://bucket/db', AWS_ENDPOINT_URL_S3: '127.0.0.1:9000' }],
    ['AWS_ENDPOINT_URL_S3', { BACKUP_URL: 's3://bucket/db', AWS_ENDPOINT_URL_S3: 'ftp://store.example' }],
    ['AWS_ENDPOINT_URL_S3', { BACKUP_URL: 's3://bucket/db', AWS_ENDPOINT_URL_S3: 'https://key:secret@store.example' }],
    ['AWS_ENDPOINT_URL', { BACKUP_URL: 's3://bucket/db', AWS_ENDPOINT_URL: 'https://store.example/?region=x' }],
    ['BACKUP_SNAPSHOT_INTERVAL_SECONDS', { BACKUP_URL: 'file:/b', BACKUP_SNAPSHOT_INTERVAL_SECONDS: '1h' }],
    ['BACKUP_SNAPSHOT_INTERVAL_SECONDS', { BACKUP_URL: 'file:/b', BACKUP_SNAPSHOT_INTERVAL_SECONDS: '10' }],
    ['BACKUP_RETENTION_SECONDS', { BACKUP_URL: 'file:/b', BACKUP_RETENTION_SECONDS: '-1' }],
    ['BACKUP_RETENTION_SECONDS', { BACKUP_URL: 'file:/b', BACKUP_SNAPSHOT_INTERVAL_SECONDS: '7200', BACKUP_RETENTION_SECONDS: '3600' }]
  ]
  for (const [variable, env] of bad) {
    test(`${JSON.stringify(env)} is refused, naming ${variable}`, () => {
      assert.throws(() => loadConfig(env), (error: unknown) => {
        assert.ok(error instanceof ConfigError)
        assert.equal(error.variable, variable)
        assert.match(error.message, new RegExp(`^${variable}: `))
        assert.doesNotMatch(error.message, /\n/)
        return true
      })
    })
  }
})
