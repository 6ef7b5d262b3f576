// The one error catalogue (contract section 7). Every code the service can answer is defined
// here, once, with its status, its stable title and its default message. Handlers throw
// `new ApiError('CODE')`; the error handler turns it into the problem body.

export const catalogue = {
  VALIDATION_ERROR: { status: 400, title: 'Validation error', message: 'The request has invalid fields.' },
  MALFORMED_JSON: { status: 400, title: 'Malformed JSON', message: 'The request body is not valid JSON.' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed request', message: 'The request is not valid HTTP.' },
  AUTHENTICATION_REQUIRED: { status: 401, title: 'Authentication required', message: 'You must be logged in to perform this action.' },
  INVALID_CREDENTIALS: { status: 401, title: 'Invalid credentials', message: 'The e-mail address or password is incorrect.' },
  ACCESS_DENIED: { status: 403, title: 'Access denied', message: 'You do not have permission to perform this action.' },
  FORBIDDEN_POST_ACCESS: { status: 403, title: 'Forbidden post access', message: 'You do not have permission to perform this action.' },
  USER_NOT_FOUND: { status: 404, title: 'User not found', message: 'The user does not exist.' },
  POST_NOT_FOUND: { status: 404, title: 'Post not found', message: 'The post does not exist.' },
  PRODUCT_NOT_FOUND: { status: 404, title: 'Product not found', message: 'The product does not exist.' },
  ORDER_NOT_FOUND: { status: 404, title: 'Order not found', message: 'The order does not exist.' },
  NOT_FOUND: { status: 404, title: 'Not found', message: 'No resource exists at this address.' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed', message: 'This method is not allowed on this resource.' },
  DUPLICATE_EMAIL: { status: 409, title: 'Duplicate e-mail', message: 'The e-mail address is already registered.' },
  PRODUCT_NOT_ON_SALE: { status: 409, title: 'Product not on sale', message: 'The product is not on sale.' },
  NOT_ENOUGH_STOCK: { status: 409, title: 'Not enough stock', message: 'There is not enough stock for the requested quantity.' },
  ORDER_CANNOT_CANCEL: { status: 409, title: 'Order cannot be canceled', message: 'The order can no longer be canceled.' },
  ORDER_CANNOT_SHIP: { status: 409, title: 'Order cannot be shipped', message: 'Only a paid order can be shipped.' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout', message: 'The request was not received in time.' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed', message: 'The resource has changed since you last read it.' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large', message: 'The request body is too large.' },
  URI_TOO_LONG: { status: 414, title: 'URI too long', message: 'The request line is too long.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type', message: 'The request body must be JSON (Content-Type: application/json).' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large', message: 'The request headers are too large.' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key reused', message: 'This Idempotency-Key was already used with a different request.' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, title: 'Idempotency key in use', message: 'A request with this Idempotency-Key is still being processed.' },
  TOO_MANY_REQUESTS: { status: 429, title: 'Too many requests', message: 'Too many requests. Try again later.' },
  INTERNAL_SERVER_ERROR: { status: 500, title: 'Internal server error', message: 'An internal server error occurred.' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable', message: 'The service is temporarily unavailable. Try again later.' }
} as const satisfies Record<string, { status: number, title: string, message: string }>

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
}

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  readonly errors: FieldError[] | undefined
  readonly headers: Record<string, string>

  constructor (code: ErrorCode, options: ApiErrorOptions = {}) {
    super(options.message ?? catalogue[code].message, { cause: options.cause })
    this.name = 'ApiError'
    this.code = code
    this.statusCode = catalogue[code].status
    this.errors = options.errors
    this.headers = options.headers ?? {}
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
