/**
 * The metadata service at 169.254.169.254, answered by the agent itself in every DHCP namespace of its host.
 *
 * A listening socket is opened inside the namespace by a short-lived helper process (`nsenter` into it, listen,
 * hand the socket over the IPC channel, exit) and served by the agent's own HTTP server: no process runs per
 * network, and a restarted agent simply opens them again. A request is for the port whose fixed IP (or allowed
 * address pair) is the source address on that network — which the host's anti-spoofing guarantees, whatever the
 * guest claims in its request — and the agent asks the control plane for that port's answer with its host
 * credential (Neutron's metadata agent with Nova's handler behind it; docs/network.md, "Choices", Metadata).
 * A POST (a guest posting its password to `/openstack/<version>/password`) travels the same way with its body,
 * for the same port: the control plane decides what it takes.
 */
import { spawn } from 'node:child_process'
import { statSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Server as NetServer, Socket } from 'node:net'
import type { DataplanePort, HostNetworkState } from '../../contracts/network/dataplane.js'
import { METADATA_ADDRESS } from './names.js'

export interface MetadataAnswer {
  status: number
  contentType: string
  body: Buffer
}

/** Asks the control plane for `path` as port `portId`'s guest sees it; with `body`, posts it there for that guest. */
export type MetadataFetch = (portId: string, path: string, body?: Buffer) => Promise<MetadataAnswer>

/** The largest body a guest may post (the control plane takes 1,020 bytes at most: a password). */
export const MAX_POST_BYTES = 16 * 1024

/** The body of `req`, or undefined once it passes `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        req.off('data', onData)
        req.pause()
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    }
    req.on('data', onData)
    req.once('end', () => resolve(Buffer.concat(chunks)))
    req.once('error', reject)
  })
}

/** Runs inside the namespace: listens, hands the socket to the parent, exits. CommonJS for `node -e`. */
const LISTEN_HELPER = `
const net = require('net')
const server = net.createServer()
server.on('error', (err) => { process.send({ error: err.message }, () => process.exit(1)) })
server.listen({ host: process.argv[1], port: 80 }, () => process.send({ ok: true }, server, () => process.exit(0)))
`

/** A listening socket inside the network namespace mounted at `file`. */
export function listenInNamespace(file: string, host: string, timeoutMs = 10_000): Promise<NetServer> {
  return new Promise((resolve, reject) => {
    const child = spawn('nsenter', [`--net=${file}`, '--', process.execPath, '-e', LISTEN_HELPER, host], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`no socket from ${file} within ${timeoutMs} ms`))
    }, timeoutMs)
    child.once('message', (message: { ok?: boolean; error?: string }, handle: unknown) => {
      clearTimeout(timer)
      if (message.ok && handle) resolve(handle as NetServer)
      else reject(new Error(`listening in ${file}: ${message.error ?? 'no socket'}`))
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (code !== 0) reject(new Error(`listening in ${file}: helper exited ${code} ${stderr.trim()}`))
    })
  })
}

/**
 * The path a guest asked for, resolved within the metadata tree: no `.` or `..` segment (percent-encoded or
 * not, after `/` or a backslash) survives, and query and fragment go. The agent asks the control plane for
 * `…/hosts/{id}/metadata/{port}<path>` with its host credential, and its URL parser resolves dot segments:
 * unresolved, `/../../network` or `/../../storage/exports` would fetch the host's own endpoints (every port's
 * state, volume keys) for the guest. Undefined for a request target that is no path at all.
 */
export function guestPath(url: string): string | undefined {
  try {
    return new URL(url, `http://${METADATA_ADDRESS}/`).pathname
  } catch {
    return undefined
  }
}

interface Listener {
  /** The namespace's inode: a namespace made again needs a new socket. */
  inode: number
  server: Server
  /** Its guests' open connections, reset when it closes. */
  connections: Set<Socket>
}

export class MetadataProxy {
  private readonly listeners = new Map<string, Listener>()
  private state: HostNetworkState | undefined

  constructor(
    private readonly fetchMetadata: MetadataFetch,
    private readonly log: (level: string, message: string, fields?: Record<string, unknown>) => void,
  ) {}

  /** Serves metadata in the namespace of every network in `namespaces` (network id → namespace file); stops the rest. */
  async converge(state: HostNetworkState, namespaces: Map<string, string>): Promise<void> {
    this.state = state
    for (const [networkId, l] of this.listeners) {
      if (!namespaces.has(networkId)) await this.close(networkId, l)
    }
    for (const [networkId, file] of namespaces) {
      const inode = statSync(file).ino
      const current = this.listeners.get(networkId)
      if (current?.inode === inode) continue
      if (current) await this.close(networkId, current)
      const socket = await listenInNamespace(file, METADATA_ADDRESS)
      const server = createServer(this.handler(networkId))
      const connections = new Set<Socket>()
      server.on('connection', (c: Socket) => {
        connections.add(c)
        c.once('close', () => connections.delete(c))
      })
      await new Promise<void>((resolve) => server.listen(socket, resolve))
      this.listeners.set(networkId, { inode, server, connections })
    }
  }

  async closeAll(): Promise<void> {
    for (const [networkId, l] of this.listeners) await this.close(networkId, l)
  }

  /**
   * Stops serving a network that left this host. Its guests' connections are reset, not closed: a close waits for
   * a FIN handshake with a guest that may be gone already, and until that orphaned socket gives up (minutes) it
   * keeps the namespace alive, and with it the veth's end in the host (a `tap…` device the back end cannot remove).
   */
  private async close(networkId: string, l: Listener): Promise<void> {
    this.listeners.delete(networkId)
    // Before close(), which ends idle keep-alive connections the usual way.
    for (const c of l.connections) c.resetAndDestroy()
    await new Promise((resolve) => l.server.close(resolve))
  }

  /** The port a request comes from: the source address on this network, never anything the guest says. */
  private portOf(networkId: string, source: string): DataplanePort | undefined {
    const address = source.replace(/^::ffff:/, '')
    const ports = this.state?.ports.filter((p) => p.networkId === networkId) ?? []
    return ports.find((p) => p.fixedIps.some((ip) => ip.ipAddress === address)) ?? ports.find((p) => p.allowedAddressPairs.some((a) => a.ipAddress === address))
  }

  /** The request handler of network `networkId`'s listener (a test serves it on a socket of its own). */
  handler(networkId: string): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => void this.answer(networkId, req, res)
  }

  private async answer(networkId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const reply = (status: number, body: string | Buffer, contentType = 'text/plain; charset=UTF-8') => {
      // An unread body (refused, or too long) is not waited for: the connection closes after the answer.
      res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...(!req.complete && { connection: 'close' }) })
      res.end(req.method === 'HEAD' ? undefined : body)
    }
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'POST') return reply(405, 'Method Not Allowed')
    const port = this.portOf(networkId, req.socket.remoteAddress ?? '')
    const path = guestPath(req.url ?? '/')
    if (!port || path === undefined) return reply(404, 'Not Found')
    let body: Buffer | undefined
    if (req.method === 'POST') {
      body = await readBody(req, MAX_POST_BYTES).catch(() => undefined)
      if (body === undefined) return reply(400, 'Request is too large.')
    }
    try {
      const answer = await this.fetchMetadata(port.id, path, body)
      reply(answer.status, answer.body, answer.contentType)
    } catch (err) {
      this.log('warn', 'metadata request failed', { port: port.id, path: req.url, error: (err as Error).message })
      reply(500, 'Internal Server Error')
    }
  }
}
