// The one error catalogue. Every code the service can answer is defined
// here, once, with its status, its stable title and its default message. Handlers throw
// `new ApiError('CODE')`; the error handler turns it into the problem body.

/** One catalogue entry, as GET /errors/{code} shows it (beside the code). */
export interface CatalogueEntry {
  status: number
  title: string
  /** The default message of a response with this code; a response may say more. */
  message: string
  /** When the code happens and what a client should do about it. */
  description: string
  /** Whether the same request, unchanged, may succeed later (408, 429, 503, IDEMPOTENCY_KEY_IN_USE). */
  retryable: boolean
}

export const catalogue = {
  VALIDATION_ERROR: { status: 400, title: 'Validation error', message: 'The request has invalid fields.',
    description: 'A path, query, header or body value breaks a field rule. `errors[]` names each failed field (`field`) and why (`message`); fix those fields and send again. The request changed nothing.',
    retryable: false },
  MALFORMED_JSON: { status: 400, title: 'Malformed JSON', message: 'The request body is not valid JSON.',
    description: 'The body is not valid JSON (or not UTF-8). Send a well-formed JSON document; nothing was changed.',
    retryable: false },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed request', message: 'The request is not valid HTTP.',
    description: 'The server could not read the request as HTTP (a broken request line or header). It is answered by the HTTP layer before any route; fix the client or the proxy that sent it.',
    retryable: false },
  CURSOR_MISMATCH: { status: 400, title: 'Cursor does not match the query', message: 'The cursor was made for a different sort or different filters.',
    description: 'A list\'s `cursor` is valid only with the `sort` and filters of the page it came from (`limit` may change). Follow the `Link` header as given, or start again without `cursor` for the new sort or filters.',
    retryable: false },
  INVALID_TOKEN: { status: 400, title: 'Invalid token', message: 'This link is invalid or has expired.',
    description: 'The `token` of an e-mail verification or a password reset is unknown, already used, replaced by a newer one, or expired (a reset token lives 30 minutes, a verification token 24 hours); the answer never says which. Ask for a new mail (POST /v1/email-verification-tokens or POST /v1/password-reset-tokens) and use the link in the newest one. For a sign-in with an identity provider (POST /v1/sessions with `provider`, `code` and `state`): the `state` is unknown, already used or older than 10 minutes, or the provider did not confirm the `code` (used, or from another sign-in); begin the sign-in again with POST /v1/oidc-authorizations.',
    retryable: false },
  AUTHENTICATION_REQUIRED: { status: 401, title: 'Authentication required', message: 'You must be logged in to perform this action.',
    description: 'The operation needs a logged-in caller and the request carried no usable token: missing, malformed, unknown, expired or revoked (logged out, or the password changed). Log in with POST /v1/sessions and send `Authorization: Bearer TOKEN`.',
    retryable: false },
  INVALID_CREDENTIALS: { status: 401, title: 'Invalid credentials', message: 'The e-mail address or password is incorrect.',
    description: 'Log-in with an e-mail address or password that does not match an account. The answer never says which of the two was wrong. Ask the user to check both; repeated failures are limited (TOO_MANY_REQUESTS).',
    retryable: false },
  EMAIL_NOT_VERIFIED: { status: 403, title: 'E-mail address not verified', message: 'Verify your e-mail address before you log in.',
    description: 'The e-mail address and password are right, but this service requires a verified address before a log-in and the account\'s address is not verified yet. Open the link in the verification mail, or ask for a new one with POST /v1/email-verification-tokens, then log in again.',
    retryable: false },
  ACCESS_DENIED: { status: 403, title: 'Access denied', message: 'You do not have permission to perform this action.',
    description: 'The caller is logged in but may not do this: it needs the ADMIN role, or it acts on another user\'s account. Do not retry with the same token.',
    retryable: false },
  INSUFFICIENT_SCOPE: { status: 403, title: 'Insufficient scope', message: 'This API key may not do this.',
    description: 'The request was made with an API key that does not hold the scope the operation needs (`WWW-Authenticate` names it: `error="insufficient_scope", scope="orders:write"`), or with a key where a log-in token is required (managing API keys, the account and sessions). Make a key with that scope, or use a log-in token; do not retry with the same key.',
    retryable: false },
  FORBIDDEN_POST_ACCESS: { status: 403, title: 'Forbidden post access', message: 'You do not have permission to perform this action.',
    description: 'Only a post\'s author may replace, change or delete it (administrators included in the refusal). Do not retry with the same token.',
    retryable: false },
  REAUTHENTICATION_REQUIRED: { status: 403, title: 'Re-authentication required', message: 'Confirm your password (or a second-factor code) to do this.',
    description: 'Changing the e-mail address, turning a second factor on, unlinking an identity provider, creating an API key and deleting the account need a session whose holder proved who they are recently: within REAUTHENTICATION_SECONDS (10 minutes by default) of its log-in. Send POST /v1/sessions/current/reauthentication with `{"password"}` (or `{"code"}`, a second-factor code), or sign in again (an account without a password signs in with its provider again), then repeat the request. Nothing was changed.',
    retryable: false },
  USER_NOT_FOUND: { status: 404, title: 'User not found', message: 'The user does not exist.',
    description: 'No user has this id (never created, or deleted). Check the id; a deleted account does not come back.',
    retryable: false },
  IDENTITY_NOT_FOUND: { status: 404, title: 'Identity not found', message: 'The account is not linked to this identity provider.',
    description: 'DELETE /v1/users/{id}/identities/{provider} names a provider the account does not sign in with. List the account\'s identities (GET /v1/users/{id}/identities) to see which it has.',
    retryable: false },
  POST_NOT_FOUND: { status: 404, title: 'Post not found', message: 'The post does not exist.',
    description: 'No post has this id (never created, or deleted). Check the id.',
    retryable: false },
  PRODUCT_NOT_FOUND: { status: 404, title: 'Product not found', message: 'The product does not exist.',
    description: 'No product has this id: in the path, or the `productId` of a new order. Check the id.',
    retryable: false },
  ORDER_NOT_FOUND: { status: 404, title: 'Order not found', message: 'The order does not exist.',
    description: 'No order with this id is visible to the caller: it does not exist, or it belongs to another user (whose orders are not revealed). Check the id and the account.',
    retryable: false },
  API_KEY_NOT_FOUND: { status: 404, title: 'API key not found', message: 'The API key does not exist.',
    description: 'The caller has no API key with this id: it never existed, was revoked, or belongs to another user. List your keys for their ids.',
    retryable: false },
  WEBHOOK_ENDPOINT_NOT_FOUND: { status: 404, title: 'Webhook endpoint not found', message: 'The webhook endpoint does not exist.',
    description: 'No webhook endpoint with this id is visible to the caller: it does not exist, was deleted, or belongs to another user. Check the id and the account.',
    retryable: false },
  WEBHOOK_DELIVERY_NOT_FOUND: { status: 404, title: 'Webhook delivery not found', message: 'The delivery does not exist.',
    description: 'The endpoint has no delivery with this id (never made, or older than the retention period). List the endpoint\'s deliveries for the ids.',
    retryable: false },
  FILE_NOT_FOUND: { status: 404, title: 'File not found', message: 'The file does not exist.',
    description: 'No file has this id (or this image is not one of the resource\'s): it was never uploaded, or it was removed, or what it belonged to (a post, a user) was deleted. A file\'s address never serves other bytes; read the resource again for its current images.',
    retryable: false },
  NOT_FOUND: { status: 404, title: 'Not found', message: 'No resource exists at this address.',
    description: 'No resource exists at this address (an unknown path, or an unknown error code under /errors). Check the URL against the API reference.',
    retryable: false },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed', message: 'This method is not allowed on this resource.',
    description: 'The path exists but not with this method. The `Allow` header lists the methods it supports.',
    retryable: false },
  DUPLICATE_EMAIL: { status: 409, title: 'Duplicate e-mail', message: 'The e-mail address is already registered.',
    description: 'Another account already uses this e-mail address (compared case-insensitively). Log in to that account, or choose another address. At a sign-in with an identity provider: an account has the provider\'s address but either side has not verified it, so the two are not linked (verify the account\'s address, then sign in with the provider again), or the account is linked to another person at that provider.',
    retryable: false },
  LAST_SIGN_IN_METHOD: { status: 409, title: 'Last way to sign in', message: 'This is the account\'s only way to sign in.',
    description: 'Unlinking this identity provider would leave the account with no way in: it has no password and no other provider. Set a password first (POST /v1/password-reset-tokens mails a link), or link another provider, then unlink this one.',
    retryable: false },
  TOO_MANY_API_KEYS: { status: 409, title: 'Too many API keys', message: 'You have as many API keys as an account may hold.',
    description: 'An account holds at most 20 live (unexpired) API keys. Revoke one you no longer use (DELETE /v1/api-keys/{id}), then create the new one.',
    retryable: false },
  TOO_MANY_IMAGES: { status: 409, title: 'Too many images', message: 'The resource has as many images as it may hold.',
    description: 'A product holds at most 10 images and a post 20. Nothing was stored; remove one (DELETE …/images/{imageId}) before adding another.',
    retryable: false },
  PRODUCT_NOT_ON_SALE: { status: 409, title: 'Product not on sale', message: 'The product is not on sale.',
    description: 'The product exists but is not on sale, so it cannot be ordered now. Nothing was ordered; the product may go on sale later (read it again before retrying).',
    retryable: false },
  NOT_ENOUGH_STOCK: { status: 409, title: 'Not enough stock', message: 'There is not enough stock for the requested quantity.',
    description: 'The product has fewer units in stock than the quantity asked for. Nothing was ordered; order fewer units (read the product\'s `stock`).',
    retryable: false },
  ORDER_CANNOT_CANCEL: { status: 409, title: 'Order cannot be canceled', message: 'The order can no longer be canceled.',
    description: 'Only a PAID order can be canceled; this one has been shipped or canceled already. Nothing changed.',
    retryable: false },
  ORDER_CANNOT_SHIP: { status: 409, title: 'Order cannot be shipped', message: 'Only a paid order can be shipped.',
    description: 'Only a PAID order can be shipped; this one has been shipped or canceled already. Nothing changed.',
    retryable: false },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout', message: 'The request was not received in time.',
    description: 'The client did not send the whole request (headers and body) within the server\'s time limit, and the connection is closed. Nothing was done; send the request again, faster (it may succeed unchanged).',
    retryable: true },
  EVENTS_EXPIRED: { status: 410, title: 'Events expired', message: 'The events after this sequence are no longer kept.',
    description: 'The feed keeps events 30 days; `after` is older than the oldest event kept, so reading on would skip events. Read the current state of the resources you follow again, then read the feed without `after` (from the oldest event kept).',
    retryable: false },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed', message: 'The resource has changed since you last read it.',
    description: 'The `If-Match` tag no longer matches: the resource changed since it was read. Nothing changed; GET it again, re-apply the change and send it with the new ETag.',
    retryable: false },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large', message: 'The request body is too large.',
    description: 'The request body is larger than the server accepts: 1 MiB of JSON by default (BODY_LIMIT_BYTES), 10 MiB for a file (FILE_MAX_BYTES), or an image of more than 40 megapixels or 8,000 pixels a side (refused from its header, before it is decoded). Send a smaller body or image.',
    retryable: false },
  RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable', message: 'The range asked for is not within the file.',
    description: 'The `Range` header asks for bytes past the end of the file; `Content-Range: bytes */SIZE` gives its size. Ask for a range within it, or for the whole file.',
    retryable: false },
  URI_TOO_LONG: { status: 414, title: 'URI too long', message: 'The request line is too long.',
    description: 'The request line (method, path and query) is longer than the server reads. Shorten the URL.',
    retryable: false },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type', message: 'The request body must be JSON (Content-Type: application/json).',
    description: 'The body is not declared as JSON (`Content-Type: application/json`, or `application/merge-patch+json` on PATCH), names a charset other than UTF-8, or is compressed. Send JSON in UTF-8. For an upload: the file\'s own bytes are not a JPEG, PNG, WebP, AVIF or GIF image (SVG, HTML, PDF and files that are also another type are refused), or the declared type disagrees with the bytes.',
    retryable: false },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large', message: 'The request headers are too large.',
    description: 'The request\'s headers together are larger than the server reads. Send fewer or smaller headers (large cookies are the usual cause).',
    retryable: false },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key reused', message: 'This Idempotency-Key was already used with a different request.',
    description: 'This `Idempotency-Key` was used before (within 24 hours) with a different request. Use a new key for a new request.',
    retryable: false },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, title: 'Idempotency key in use', message: 'A request with this Idempotency-Key is still being processed.',
    description: 'The first request with this `Idempotency-Key` is still being processed. Retry the same request a moment later: it then returns that first request\'s response.',
    retryable: true },
  TOO_MANY_STREAMS: { status: 429, title: 'Too many event streams', message: 'Too many event streams are open.',
    description: 'The caller already has the most event streams (GET /v1/events with `Accept: text/event-stream`) one user may keep open on an instance (10), or the instance its most in all. Close a stream you no longer read, or retry after the seconds in `Retry-After`.',
    retryable: true },
  TOO_MANY_REQUESTS: { status: 429, title: 'Too many requests', message: 'Too many requests. Try again later.',
    description: 'A rate limit was reached (the general per-client limit, or the limits on failed log-ins and sign-ups). Wait the number of seconds in `Retry-After`, then retry; the `RateLimit` headers say how much is left.',
    retryable: true },
  INTERNAL_SERVER_ERROR: { status: 500, title: 'Internal server error', message: 'An internal server error occurred.',
    description: 'An unexpected failure on the server; it has been logged with the `requestId`. The request may or may not have taken effect: read the resource before repeating a write, and report the `requestId` if it persists.',
    retryable: false },
  MFA_REQUIRED: { status: 401, title: 'Second factor required', message: 'Enter a code from your authenticator app.',
    description: 'The password (or the identity provider\'s sign-in) was right and the account has a second factor. The body carries `challenge` and `expiresAt` (5 minutes): send POST /v1/sessions with `{"challenge", "code"}`, the code from the person\'s authenticator app or one of their recovery codes.',
    retryable: false },
  INVALID_MFA_CODE: { status: 401, title: 'Invalid code', message: 'The code is not valid.',
    description: 'A log-in\'s second step was refused: the code is wrong, already used, or not of the current time; or the challenge is unknown, used, older than 5 minutes, or voided by five wrong codes. The answer never says which. Ask for a fresh code; when the challenge is gone, log in again. Failures count in the log-in limits.',
    retryable: false },
  MFA_ALREADY_ENABLED: { status: 409, title: 'Second factor already on', message: 'The account already has a second factor.',
    description: 'The account\'s authenticator is active: it cannot be enrolled or activated again. To change it, remove it (DELETE /v1/users/{id}/totp with the password and a code), then enrol anew.',
    retryable: false },
  TOTP_NOT_FOUND: { status: 404, title: 'No authenticator', message: 'The account has no authenticator to do this with.',
    description: 'PUT /v1/users/{id}/totp without an enrolment waiting for its first code (POST /v1/users/{id}/totp first), or DELETE /v1/users/{id}/totp when the account has no active authenticator.',
    retryable: false },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable', message: 'The service is temporarily unavailable. Try again later.',
    description: 'The database cannot be reached (or has no primary for a moment, or could not confirm a commit on its standby), or the server is shutting down, or an identity provider a sign-in needs is down, slow or answering garbage. Nothing was acknowledged: retry after the number of seconds in `Retry-After` (another instance may answer sooner). A write cut off during its commit may still have been made; retry an order with the same `Idempotency-Key` to be sure of one order.',
    retryable: true }
} as const satisfies Record<string, CatalogueEntry>

export type ErrorCode = keyof typeof catalogue
export const errorCodes = Object.keys(catalogue) as ErrorCode[]

export interface FieldError {
  field: string
  message: string
}

export interface ApiErrorOptions {
  message?: string
  errors?: FieldError[]
  headers?: Record<string, string>
  cause?: unknown
  /** Members of the error body beyond the standard ones, for the codes that document them (MFA_REQUIRED's challenge). */
  details?: Record<string, unknown>
}

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  readonly errors: FieldError[] | undefined
  readonly headers: Record<string, string>
  readonly details: Record<string, unknown> | undefined

  constructor (code: ErrorCode, options: ApiErrorOptions = {}) {
    super(options.message ?? catalogue[code].message, { cause: options.cause })
    this.name = 'ApiError'
    this.code = code
    this.statusCode = catalogue[code].status
    this.errors = options.errors
    this.headers = options.headers ?? {}
    this.details = options.details
  }
}

export function validationError (errors: FieldError[]): ApiError {
  return new ApiError('VALIDATION_ERROR', { errors })
}

/** 503 with Retry-After: the database is out of reach, or the server is shutting down. */
export function serviceUnavailable (options: { message?: string, cause?: unknown, headers?: Record<string, string> } = {}): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', { ...options, headers: { 'retry-after': '5', ...options.headers } })
}

export function isApiError (error: unknown): error is ApiError {
  return error instanceof ApiError
}
