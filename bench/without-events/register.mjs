// `node --import ./bench/without-events/register.mjs <the service's entry>`: the service with its
// event recording taken out, for `npm run bench` to measure what recording events costs each write
// route (the same service, started the same way, in the same run). Nothing in the service knows
// about it: module hooks (./hooks.mjs) hand the service stand-ins for the two modules that record
// events. Registered after tsx when the service runs from source, so these hooks see tsx's
// resolutions.
import { register } from 'node:module'

register('./hooks.mjs', import.meta.url)
