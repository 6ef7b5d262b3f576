import fp from 'fastify-plugin'
import { WebhookDispatcher } from './dispatcher.js'

// Every instance of the service runs a dispatcher (no second program to operate): it starts
// when the app is ready and stops, letting attempts in flight finish briefly, before the
// database closes.
export const webhookDispatcher = fp(async (app) => {
  const dispatcher = new WebhookDispatcher({ db: app.db, dialect: app.dialect, config: app.config, log: app.log.child({ component: 'webhooks' }), notifications: app.notifications })
  app.addHook('onReady', async () => { dispatcher.start() })
  app.addHook('onClose', async () => { await dispatcher.stop() })
}, { name: 'webhook-dispatcher', dependencies: ['database', 'notifications'] })
