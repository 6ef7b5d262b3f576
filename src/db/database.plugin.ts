import fp from 'fastify-plugin'
import type { DatabaseHandle } from './database.js'

export interface DatabasePluginOptions {
  database: DatabaseHandle
}

// `app.db` and `app.dialect` for every feature; the pool is closed when the app closes.
export const database = fp<DatabasePluginOptions>(async (app, { database }) => {
  app.decorate('db', database.db)
  app.decorate('dialect', database.dialect)
  app.addHook('onClose', async () => { await database.db.destroy() })
}, { name: 'database' })
