import createClient, { type Client, type ClientOptions } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'

// The typed client of the API: the types are generated from the OpenAPI document
// (client/schema.d.ts, by `npm run client`) and openapi-fetch makes the requests, so every
// path, parameter, body and response is checked by TypeScript against the document.

export type { components, operations, paths }
export type Schemas = components['schemas']

export interface ApiClientOptions extends ClientOptions {
  /** A bearer credential, sent as `Authorization: Bearer …`: a log-in token from `POST /v1/sessions`, or an API key (`rk_…`) from `POST /v1/api-keys`. */
  token?: string
}

/**
 * A client for the API at `baseUrl` (e.g. `http://127.0.0.1:3000`). Its answers are JSON: the
 * event stream (`GET /v1/events` as text/event-stream) is for an EventSource, not for this client.
 */
export function createApiClient (baseUrl: string, { token, headers, ...options }: ApiClientOptions = {}): Client<paths, 'application/json'> {
  return createClient<paths, 'application/json'>({
    baseUrl,
    ...options,
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(headers as Record<string, string> | undefined) }
  })
}
