import { Image } from '../files/image.schemas.js'
import { SystemStatus } from '../system/system.schemas.js'
import { FieldErrorSchema, Problem, ValidationProblem } from '../http/schemas.js'
import { Order, OrderCreateBody, OrderPatchBody } from '../orders/order.schemas.js'
import { Author, Post, PostCreateBody, PostPatchBody, PostReplaceBody, PostViews } from '../posts/post.schemas.js'
import { Product, ProductCreateBody, ProductPatchBody } from '../products/product.schemas.js'
import { ChallengeLoginBody, CodeReauthenticationBody, CurrentSession, LoginBody, PasswordLoginBody, PasswordReauthenticationBody, ProviderLoginBody, ReauthenticationBody, Session, SessionUser } from '../sessions/session.schemas.js'
import { TotpActivation, TotpActivationBody, TotpEnrolment, TotpRemovalBody } from '../mfa/mfa.schemas.js'
import { Identity, OidcAuthorization, OidcAuthorizationBody } from '../oidc/oidc.schemas.js'
import { ManagedUser, PasswordChangeBody, Profile, UserAccount, UserCreateBody, UserPrivate, UserPublic, UserReplaceBody } from '../users/user.schemas.js'
import { EmailVerificationBody, MailRequestBody, PasswordResetBody } from '../accounts/account.schemas.js'
import { ErrorEntry, Health, ServiceIndex } from './service.routes.js'
import { Event, EventActor, eventSchemas, PingEvent } from '../events/event.schemas.js'
import { ApiKey, ApiKeyCreateBody, ApiKeyWithSecret } from '../api-keys/api-key.schemas.js'
import { WebhookDelivery, WebhookEndpoint, WebhookEndpointCreateBody, WebhookEndpointPatchBody, WebhookEndpointWithSecret } from '../webhooks/webhook.schemas.js'

/**
 * Every named schema (those with a `$id`, see named() in http/schemas.ts). They are added to
 * the app once (app.addSchema) before the routes that reference them, so the serializer, the
 * request validator and the OpenAPI document (components.schemas) all resolve the same names.
 */
export const componentSchemas = [
  FieldErrorSchema, Problem, ValidationProblem, Image,
  UserPublic, UserPrivate, UserAccount, ManagedUser, UserCreateBody, UserReplaceBody, PasswordChangeBody, Profile,
  MailRequestBody, EmailVerificationBody, PasswordResetBody,
  PasswordLoginBody, ProviderLoginBody, ChallengeLoginBody, LoginBody,
  PasswordReauthenticationBody, CodeReauthenticationBody, ReauthenticationBody,
  TotpEnrolment, TotpActivationBody, TotpActivation, TotpRemovalBody, SessionUser, Session, CurrentSession,
  OidcAuthorizationBody, OidcAuthorization, Identity,
  Author, Post, PostCreateBody, PostReplaceBody, PostPatchBody, PostViews,
  Product, ProductCreateBody, ProductPatchBody,
  Order, OrderCreateBody, OrderPatchBody,
  EventActor, ...eventSchemas, Event, PingEvent,
  WebhookEndpoint, WebhookEndpointWithSecret, WebhookEndpointCreateBody, WebhookEndpointPatchBody, WebhookDelivery,
  ApiKey, ApiKeyWithSecret, ApiKeyCreateBody,
  SystemStatus, ErrorEntry, Health, ServiceIndex
]
