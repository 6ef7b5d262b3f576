import fp from 'fastify-plugin'
import { Notifications } from './notifications.js'

// `app.notifications`: on PostgreSQL, the instance's one LISTEN connection (db/notifications.ts);
// undefined on SQLite, where everything happens in this one process.
export const notifications = fp(async (app) => {
  const listening = app.dialect === 'postgres' ? new Notifications(app.config.databaseUrl) : undefined
  app.decorate('notifications', listening)
  app.addHook('onClose', async () => { await listening?.stop() })
}, { name: 'notifications', dependencies: ['database'] })
