import fp from 'fastify-plugin'
import { MailSender, type Compose } from './mail-sender.js'

export interface MailSenderOptions {
  /** What each queued mail says, decided when it is sent (the features' mails: accounts/account-mail.ts). */
  compose: Compose
  /** The site's name, as every mail signs it. */
  site: string
}

// Every instance of the service runs a mail sender (no second program to operate): it starts
// when the app is ready and stops, letting mails in flight finish briefly, before the database
// closes. Without SMTP_URL it writes each mail to MAIL_DIR and logs the file's path.
export const mailSender = fp<MailSenderOptions>(async (app, { compose, site }) => {
  const sender = new MailSender({
    db: app.db,
    dialect: app.dialect,
    config: app.config.mail,
    site,
    log: app.log.child({ component: 'mail' }),
    compose,
    registry: app.metricsRegistry
  })
  app.addHook('onReady', async () => { sender.start() })
  app.addHook('onClose', async () => { await sender.stop() })
}, { name: 'mail-sender', dependencies: ['database', 'metrics'] })
