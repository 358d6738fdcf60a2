/**
 * Remote consoles in one place for the composition root: the console auth tokens, the sessions that carry
 * agent hosts' streams (and relay them between processes), the websocket proxy users connect to, and the
 * websocket upgrade routes they answer (docs/compute.md, "Remote consoles").
 */
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import type { Config } from '../config/settings.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { ConsoleProtocol } from '../../contracts/host/compute-driver.js'
import type { UpgradeRoute } from '../http/upgrades.js'
import type { Db } from '../storage/store.js'
import { ConsoleProxy } from './console-proxy.js'
import { ConsoleSessions } from './console-sessions.js'
import { ConsoleTokens } from './console-tokens.js'

export interface ConsolesOptions {
  db: Db
  box: SecretBox
  config: Pick<Config, 'publicUrl' | 'consoleTokenTtlSeconds' | 'consoleAllowedOrigins' | 'consoleIdleSeconds'>
  logger: Logger
  /** The guest's console from its host's driver (the conductor's registry). */
  open: (serverId: string, protocol: ConsoleProtocol) => Promise<Duplex>
  /** The host a credential belongs to, or a throw (the onboarding service). */
  authenticateHost: (credential: string | undefined) => Promise<string>
  /** Ping interval of every console websocket (tests shorten it). */
  pingMs?: number
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'

export class Consoles {
  readonly tokens: ConsoleTokens
  readonly sessions: ConsoleSessions
  readonly proxy: ConsoleProxy

  constructor(o: ConsolesOptions) {
    this.tokens = new ConsoleTokens(o.db, o.config.consoleTokenTtlSeconds * 1000)
    this.sessions = new ConsoleSessions({ db: o.db, box: o.box, logger: o.logger, authenticateHost: o.authenticateHost, pingMs: o.pingMs })
    this.proxy = new ConsoleProxy({
      tokens: this.tokens,
      sessions: this.sessions,
      open: o.open,
      publicUrl: o.config.publicUrl,
      allowedOrigins: o.config.consoleAllowedOrigins,
      idleMs: o.config.consoleIdleSeconds * 1000,
      pingMs: o.pingMs,
      logger: o.logger,
    })
  }

  /** The websocket endpoints: users' consoles, agents' streams (host credential), relays between processes. */
  upgradeRoutes(): UpgradeRoute[] {
    return [
      // /websockify: where noVNC and websockify clients go when given no path (Tempest's create_websocket for serial URLs).
      { pattern: /^\/(console\/websocket|websockify)\/?$/, handle: (request, socket, head) => this.proxy.accept(request, socket, head) },
      { pattern: new RegExp(`^/console/relay/(${UUID})$`), handle: (request, socket, head, m) => this.sessions.acceptRelay(request, socket, head, m[1]) },
      {
        pattern: new RegExp(`^/resmgr/v1/hosts/([^/]{1,64})/consoles/(${UUID})$`),
        handle: (request, socket, head, m) => this.sessions.acceptHost(request, socket, head, m[1], m[2]),
      },
    ]
  }

  /** Ends every console session of this process (graceful stop). */
  closeAll(): void {
    this.sessions.closeAll('pcc-server is stopping')
  }
}
