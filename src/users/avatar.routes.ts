import type { FastifyPluginAsync } from 'fastify'
import { actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { requireSelf } from '../auth/authentication.js'
import { recordEvent } from '../events/event.repository.js'
import { storedImage } from '../files/file.repository.js'
import { registerImageRoutes } from '../files/image-routes.js'
import { ApiError } from '../http/errors.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { lockUser, setAvatar } from './user.repository.js'
import { toUserAccount } from './user.representation.js'
import type { UserRow } from './user.table.js'

// A user's avatar: PUT /v1/users/{id}/avatar (replaces the last), DELETE /v1/users/{id}/avatar.
// The profile shows it; the change is the user's (user.updated, seen by them and administrators).
const routes: FastifyPluginAsync = async (app) => {
  const { dialect } = app
  await registerImageRoutes<UserRow>(app, {
    path: '/users/:id/avatar',
    collection: false,
    tag: 'users',
    operations: { add: 'putUserAvatar', remove: 'removeUserAvatar' },
    noun: 'user\'s avatar',
    scope: undefined,
    who: 'The user only, with a log-in token',
    errors: ['USER_NOT_FOUND', 'ACCESS_DENIED'],
    spec: (request, id) => ({
      owner: { kind: 'avatar', id },
      max: undefined,
      lock: async (executor) => await lockUser(executor, dialect, id),
      notFound: new ApiError('USER_NOT_FOUND'),
      authorize: () => { requireSelf(request, id) },
      save: async (trx, _user, images, now) => {
        const image = images.at(-1)
        const user = await setAvatar(trx, id, image === undefined ? null : JSON.stringify(storedImage(image)), now)
        await recordEvent(trx, { type: 'user.updated', resourceId: id, audience: id, data: toUserAccount(user), actor: actorOf(request) })
      }
    })
  })
}

export const avatarRoutes = fp(routes, { name: 'avatars', dependencies: [...FEATURE_PREREQUISITES, 'files'], encapsulate: true })
