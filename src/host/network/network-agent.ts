/**
 * The agent's guest networking: keeps the host's data plane converged to the control plane's truth.
 *
 * - A long poll on `GET /resmgr/v1/hosts/{id}/network?known=<hash>` answers as soon as anything this host
 *   needs changed (a port bound, a rule added, a peer joined): the back end applies the new state at once, so a
 *   rule change reaches running guests within the poll's wake-up (~100 ms) plus the apply.
 * - Every answer carries the whole state, and the agent starts by asking for it: a restarted agent rebuilds
 *   (or, when everything is still right, merely checks) the host from one answer, without cutting guests off.
 * - When a poll times out with nothing new, the last state is applied again, repairing drift (a device removed
 *   by hand, a tap QEMU made by itself) within the poll's period.
 * - `syncNow()` fetches and applies before the conductor's next step (the `networking` step of a build), so a
 *   guest's tap is in its bridge, behind its rules, before the guest starts.
 *
 * Configuration: agent.json `network` — `backend` (`linux`; `simulated` keeps the state in memory; `none` turns
 * this off; default `linux` for the qemu driver, `none` otherwise), `tunnel_ip` (default: this host's source
 * address towards the control plane), `physical_interfaces` ({physical network: interface}), `vxlan_port` (4789).
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type { HostNetworkAnswer, HostNetworkFacts, HostNetworkState } from '../../contracts/network/dataplane.js'
import { HttpError } from '../agent/http.js'
import type { NetworkBackend } from './backend.js'
import { DhcpServers } from './linux/dhcp.js'
import { LinuxNetworkBackend } from './linux/linux-backend.js'
import { MetadataProxy, type MetadataAnswer } from './metadata-proxy.js'
import { names } from './names.js'
import { SimulatedNetworkBackend } from './simulated-backend.js'
import { sourceAddressTowards } from '../agent/source-address.js'

export interface NetworkConfig {
  backend?: 'linux' | 'simulated' | 'none'
  tunnel_ip?: string
  physical_interfaces?: Record<string, string>
  vxlan_port?: number
}

/** What the network agent needs of the agent: its root, the control plane's URL, its calls and its log. */
export interface AgentServices {
  root: string
  controller: string
  /** A JSON call for this host (`/resmgr/v1/hosts/{id}` + path). */
  api<T>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<T>
  /** A call for this host whose answer is read as bytes (and whose body, if any, is sent as bytes); 4xx/5xx reject with the agent's HttpError. */
  stream(method: string, path: string, body?: Readable): Promise<IncomingMessage>
  log(level: string, message: string, fields?: Record<string, unknown>): void
}

const POLL_SECONDS = 25

export class NetworkAgent {
  private known = ''
  private last: HostNetworkState | undefined
  private applying: Promise<void> = Promise.resolve()
  /** The syncNow fetching or applying now (settled when none is). */
  private syncing: Promise<void> = Promise.resolve()
  /** A syncNow waiting for the one in progress (or an apply) to end, not fetching yet: callers arriving meanwhile share it. */
  private queuedSync: Promise<void> | undefined
  private stopped = false
  private readonly abort = new AbortController()
  private tunnelIp: string | null = null
  private metadata?: MetadataProxy

  private constructor(
    private readonly agent: AgentServices,
    private readonly config: NetworkConfig,
    private readonly backendName: 'linux' | 'simulated',
    private backend?: NetworkBackend,
  ) {}

  /** The network agent the configuration asks for, or undefined when networking is off (`none`). */
  static create(agent: AgentServices, config: NetworkConfig | undefined, driver: string): NetworkAgent | undefined {
    const backend = config?.backend ?? (driver === 'qemu' ? 'linux' : 'none')
    if (backend === 'none') return undefined
    if (backend !== 'linux' && backend !== 'simulated') throw new Error(`network.backend ${String(backend)} is not one of linux, simulated, none`)
    return new NetworkAgent(agent, config ?? {}, backend)
  }

  /** Reported in the heartbeat's facts: the control plane tunnels to `tunnel_ip`. */
  facts(): HostNetworkFacts {
    return { backend: this.backendName, tunnel_ip: this.tunnelIp, physical_networks: Object.keys(this.config.physical_interfaces ?? {}).sort() }
  }

  /** Finds the tunnel address and makes the back end; before the first heartbeat, so the facts carry it. */
  async start(): Promise<void> {
    this.tunnelIp = this.config.tunnel_ip ?? (await this.sourceAddress())
    const warn = (message: string, fields?: Record<string, unknown>) => this.agent.log('warn', `network: ${message}`, fields)
    this.backend =
      this.backendName === 'linux'
        ? new LinuxNetworkBackend({ root: this.agent.root, tunnelIp: this.tunnelIp, physicalInterfaces: this.config.physical_interfaces ?? {}, vxlanPort: this.config.vxlan_port ?? 4789, warn })
        : new SimulatedNetworkBackend()
    if (this.backend instanceof LinuxNetworkBackend) this.metadata = new MetadataProxy((portId, path, body) => this.askMetadata(portId, path, body), (l, m, f) => this.agent.log(l, m, f))
    this.agent.log('info', 'network back end ready', { backend: this.backendName, tunnelIp: this.tunnelIp })
  }

  /** The long-poll loop, until stop(). */
  async run(): Promise<void> {
    for (let failures = 0; !this.stopped; ) {
      try {
        const answer = await this.agent.api<HostNetworkAnswer | undefined>('GET', `/network?known=${this.known}&wait=${POLL_SECONDS}`, undefined, (POLL_SECONDS + 15) * 1000)
        await this.converge(answer)
        failures = 0
      } catch (err) {
        if (this.stopped) return
        const delay = Math.min(30_000, 500 * 2 ** Math.min(failures++, 10)) * (0.5 + Math.random() / 2)
        if (failures === 1 || failures % 10 === 0) this.agent.log('warn', 'network sync failed; retrying', { error: (err as Error).message, retryInMs: Math.round(delay) })
        await this.pause(delay)
      }
    }
  }

  /**
   * Fetches the state now and applies it (a build's networking step waits for this). Each caller needs a state
   * fetched after it asked, and applies go one at a time: the callers that ask while an apply runs share the one
   * fetch and apply made after it, so servers built together cost one apply, not one after the other each (an
   * apply takes seconds with many networks on a busy host, and the step's command has a bounded wait).
   */
  syncNow(): Promise<void> {
    if (this.queuedSync) return this.queuedSync
    const sync = Promise.all([this.syncing, this.applying]).then(() => {
      this.queuedSync = undefined
      return this.fetchAndApply()
    })
    this.queuedSync = sync
    this.syncing = sync.catch(() => {})
    return sync
  }

  /** One fetch and apply; a failure is tried again twice (a control-plane hiccup must not fail a build). */
  private async fetchAndApply(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await this.agent.api<HostNetworkAnswer>('GET', '/network?wait=0')
        await this.converge(answer)
        return
      } catch (err) {
        if (attempt >= 3 || this.stopped) throw err
        await this.pause(500 * attempt)
      }
    }
  }

  stop(): void {
    this.stopped = true
    this.abort.abort()
    void this.metadata?.closeAll()
  }

  /** Applies a new state, or the last one again when nothing changed; one apply at a time. */
  private converge(answer: HostNetworkAnswer | undefined): Promise<void> {
    const next = this.applying.then(async () => {
      const state = answer?.state ?? this.last
      if (!state || !this.backend) return
      const started = Date.now()
      await this.backend.apply(state)
      await this.serveMetadata(state)
      if (answer) {
        this.known = answer.hash
        this.last = answer.state
        this.agent.log('info', 'network state applied', { ports: state.ports.length, networks: state.networks.length, routers: state.routers.length, ms: Date.now() - started })
      }
    })
    this.applying = next.catch(() => {})
    return next
  }

  /** Metadata in the DHCP namespace of every network this host serves (a failure is retried at the next apply). */
  private async serveMetadata(state: HostNetworkState): Promise<void> {
    if (!this.metadata || !(this.backend instanceof LinuxNetworkBackend)) return
    const namespaces = this.backend.namespaces
    try {
      await this.metadata.converge(state, new Map(DhcpServers.served(state).map((n) => [n.id, namespaces.path(names.dhcpNamespace(n.id))])))
    } catch (err) {
      this.agent.log('warn', 'network: metadata not served', { error: (err as Error).message })
    }
  }

  /**
   * The control plane's answer for a guest's metadata request (`path` resolved by the proxy), or its POST (`body`);
   * the control plane's refusals are the guest's answer too, in plain text.
   */
  private async askMetadata(portId: string, path: string, body?: Buffer): Promise<MetadataAnswer> {
    try {
      const res = await this.agent.stream(body ? 'POST' : 'GET', `/metadata/${portId}${path}`, body && Readable.from([body]))
      const chunks: Buffer[] = []
      for await (const chunk of res) chunks.push(chunk as Buffer)
      return { status: res.statusCode ?? 200, contentType: String(res.headers['content-type'] ?? 'text/plain'), body: Buffer.concat(chunks) }
    } catch (err) {
      // 404 (no such port of this host's, or no such path), 405, 409 (a password is stored already), 400 (too long).
      if (err instanceof HttpError && [400, 404, 405, 409].includes(err.status)) {
        return { status: err.status, contentType: 'text/plain; charset=UTF-8', body: Buffer.from(`${err.status} ${STATUS_CODES[err.status]}\n`) }
      }
      throw err
    }
  }

  /** This host's source address towards the control plane: what other hosts reach it at, as a rule. */
  private async sourceAddress(): Promise<string | null> {
    try {
      return await sourceAddressTowards(this.agent.controller)
    } catch (err) {
      this.agent.log('warn', 'network: no tunnel address found; set network.tunnel_ip in agent.json', { error: (err as Error).message })
      return null
    }
  }

  private pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.abort.signal }).catch(() => {})
  }
}
