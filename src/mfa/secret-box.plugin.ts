import fp from 'fastify-plugin'
import { serviceUnavailable } from '../http/errors.js'
import { SecretBox } from './secret-box.js'
import { loadSecretKey } from './secret-key.js'

// The instance's key for secrets at rest (SECRET_KEY, or the embedded default's key file),
// read on first use. Without one (PostgreSQL without SECRET_KEY) the operations that need it
// answer 503 and the log says why; nothing else of the service depends on it.
export const secretBox = fp(async (app) => {
  let box: Promise<SecretBox> | undefined
  app.decorate('secretBox', async (): Promise<SecretBox> => {
    box ??= loadSecretKey(app.config).then((source) => {
      if ('key' in source) return new SecretBox(source.key)
      throw new Error(source.unavailable)
    })
    try {
      return await box
    } catch (error) {
      // Not kept: a key file fixed by the operator is read at the next use.
      box = undefined
      app.log.error({ err: error }, 'no key for secrets at rest: the second factor is unavailable')
      throw serviceUnavailable({ message: 'The second factor is not available on this server. Try again later.', cause: error })
    }
  })
  // Said at start-up too, so that an instance started without the key its peers have is found
  // before people are refused by it.
  app.addHook('onReady', async () => {
    if (app.config.secretKey === undefined && app.dialect === 'postgres') {
      app.log.warn('SECRET_KEY is not set: on PostgreSQL this instance cannot enrol or check second factors (503); every instance needs the same SECRET_KEY')
    }
  })
}, { name: 'secret-box', dependencies: ['database'] })
