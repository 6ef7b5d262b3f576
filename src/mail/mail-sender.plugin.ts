import fp from 'fastify-plugin'
import { accountMail } from '../accounts/account-mail.js'
import { siteName } from '../accounts/account-links.js'
import { MailSender } from './mail-sender.js'

// Every instance of the service runs a mail sender (no second program to operate): it starts
// when the app is ready and stops, letting mails in flight finish briefly, before the database
// closes. Without SMTP_URL it writes each mail to MAIL_DIR and logs the file's path.
export const mailSender = fp(async (app) => {
  const sender = new MailSender({
    db: app.db,
    dialect: app.dialect,
    config: app.config.mail,
    site: siteName(app.config),
    log: app.log.child({ component: 'mail' }),
    compose: accountMail(app.db, app.config),
    registry: app.metricsRegistry
  })
  app.addHook('onReady', async () => { sender.start() })
  app.addHook('onClose', async () => { await sender.stop() })
}, { name: 'mail-sender', dependencies: ['database', 'metrics'] })
