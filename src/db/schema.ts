import type { Kysely, Transaction } from 'kysely'
import type { UserTable } from '../users/user.table.js'
import type { SessionTable } from '../sessions/session.table.js'
import type { KnownLoginClientTable, LoginFailureTable } from '../limits/login-failure.table.js'
import type { PostTable } from '../posts/post.table.js'
import type { ProductTable } from '../products/product.table.js'
import type { IdempotencyKeyTable, OrderTable } from '../orders/order.table.js'
import type { EventFeedTable, EventLogTable, EventPendingTable, EventTable } from '../events/event.table.js'
import type { WebhookDeliveryTable, WebhookEndpointTable } from '../webhooks/webhook.table.js'
import type { StreamTicketTable } from '../auth/stream-ticket.table.js'
import type { ApiKeyTable } from '../api-keys/api-key.table.js'
import type { AccountTokenTable } from '../accounts/account-token.table.js'
import type { LimitHitTable } from '../limits/limit-hit.table.js'
import type { MailOutboxTable } from '../mail/mail.table.js'
import type { IdentityTable } from '../oidc/identity.table.js'
import type { OidcFlowTable } from '../oidc/oidc-flow.table.js'
import type { BlobTable, FileTable, LeaseTable } from '../files/file.table.js'
import type { MfaChallengeTable, RecoveryCodeTable, TotpFactorTable } from '../mfa/mfa.tables.js'

export interface Database {
  users: UserTable
  sessions: SessionTable
  login_failures: LoginFailureTable
  known_login_clients: KnownLoginClientTable
  posts: PostTable
  products: ProductTable
  orders: OrderTable
  idempotency_keys: IdempotencyKeyTable
  events: EventTable
  event_feed: EventFeedTable
  event_pending: EventPendingTable
  event_log: EventLogTable
  webhook_endpoints: WebhookEndpointTable
  webhook_deliveries: WebhookDeliveryTable
  stream_tickets: StreamTicketTable
  api_keys: ApiKeyTable
  account_tokens: AccountTokenTable
  mail_outbox: MailOutboxTable
  limit_hits: LimitHitTable
  user_identities: IdentityTable
  oidc_flows: OidcFlowTable
  totp_factors: TotpFactorTable
  recovery_codes: RecoveryCodeTable
  mfa_challenges: MfaChallengeTable
  blobs: BlobTable
  files: FileTable
  leases: LeaseTable
}

export type Db = Kysely<Database>
// Query functions take either the database or an open transaction (kysely example style).
export type Executor = Kysely<Database> | Transaction<Database>
