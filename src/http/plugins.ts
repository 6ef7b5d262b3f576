// The plugins every feature's routes need registered before them: the error handler and
// validation they rely on, routing and the OpenAPI document (whose onRoute hooks must see each
// route), the body parser, the database, and authentication.
export const FEATURE_PREREQUISITES = ['error-handler', 'unknown-routes', 'openapi', 'json-body', 'validation', 'database', 'authentication']
