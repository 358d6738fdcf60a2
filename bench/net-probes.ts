/**
 * Probes the network benchmarks run inside stand-in guests (`ip netns exec <guest> node net-probes.js …`). Each
 * prints one JSON line with epoch-millisecond times, so the benchmark compares them with when it acted.
 *
 * - `dhcp <mac> <timeout-ms>`: a DHCP client that sends DISCOVER every 10 ms (busybox udhcpc retries once a
 *   second at best, which would hide everything below a second) and completes the exchange with REQUEST/ACK.
 *   Prints `{discoverAt, offerAt, ackAt, ip}`.
 * - `connect <port> <timeout-ms> <ip>…`: tries a TCP connection to each address every 50 ms until the address
 *   answers at all — an accept or a refusal (RST) both prove the packet passed the firewall; silence is a drop.
 *   Prints `{answeredAt: {ip: ms}}`.
 */
import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { randomBytes } from 'node:crypto'

function dhcpPacket(type: 1 | 3, xid: Buffer, mac: string, requested?: { ip: string; server: string }): Buffer {
  const head = Buffer.alloc(240)
  head[0] = 1 // BOOTREQUEST
  head[1] = 1 // Ethernet
  head[2] = 6
  xid.copy(head, 4)
  head.writeUInt16BE(0x8000, 10) // broadcast replies: the probe has no address yet
  Buffer.from(mac.split(':').map((h) => parseInt(h, 16))).copy(head, 28)
  head.writeUInt32BE(0x63825363, 236)
  const options = [53, 1, type]
  if (requested) {
    options.push(50, 4, ...requested.ip.split('.').map(Number), 54, 4, ...requested.server.split('.').map(Number))
  }
  options.push(55, 3, 1, 3, 26, 255)
  return Buffer.concat([head, Buffer.from(options)])
}

function parseReply(msg: Buffer, xid: Buffer): { type: number; ip: string; server: string } | undefined {
  if (msg.length < 240 || msg[0] !== 2 || !msg.subarray(4, 8).equals(xid)) return undefined
  const ip = [...msg.subarray(16, 20)].join('.')
  let type = 0
  let server = ''
  for (let i = 240; i < msg.length && msg[i] !== 255; ) {
    const code = msg[i]
    if (code === 0) {
      i++
      continue
    }
    const len = msg[i + 1]
    if (code === 53) type = msg[i + 2]
    if (code === 54) server = [...msg.subarray(i + 2, i + 6)].join('.')
    i += 2 + len
  }
  return { type, ip, server }
}

async function dhcp(mac: string, timeoutMs: number): Promise<void> {
  const xid = randomBytes(4)
  const socket = createSocket({ type: 'udp4', reuseAddr: true })
  await new Promise<void>((r) => socket.bind(68, '0.0.0.0', r))
  socket.setBroadcast(true)
  const out: { discoverAt: number; offerAt?: number; ackAt?: number; ip?: string } = { discoverAt: Date.now() }
  const send = (p: Buffer) => socket.send(p, 67, '255.255.255.255')
  const discover = dhcpPacket(1, xid, mac)
  const timer = setInterval(() => {
    if (out.offerAt === undefined) send(discover)
  }, 10)
  send(discover)
  let giveUp: NodeJS.Timeout | undefined
  const done = new Promise<void>((resolve) => {
    giveUp = setTimeout(resolve, timeoutMs)
    socket.on('message', (msg) => {
      const reply = parseReply(msg, xid)
      if (!reply) return
      if (reply.type === 2 && out.offerAt === undefined) {
        out.offerAt = Date.now()
        send(dhcpPacket(3, xid, mac, { ip: reply.ip, server: reply.server }))
      } else if (reply.type === 5 && out.ackAt === undefined) {
        out.ackAt = Date.now()
        out.ip = reply.ip
        resolve()
      }
    })
  })
  await done
  clearTimeout(giveUp)
  clearInterval(timer)
  socket.close()
  process.stdout.write(JSON.stringify(out) + '\n')
}

function attempt(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port, timeout: 50 })
    const finish = (answered: boolean) => {
      s.destroy()
      resolve(answered)
    }
    s.on('connect', () => finish(true))
    s.on('error', (err: NodeJS.ErrnoException) => finish(err.code === 'ECONNREFUSED'))
    s.on('timeout', () => finish(false))
  })
}

async function connectAll(port: number, timeoutMs: number, ips: string[]): Promise<void> {
  const answeredAt: Record<string, number> = {}
  const deadline = Date.now() + timeoutMs
  await Promise.all(
    ips.map(async (ip) => {
      while (Date.now() < deadline) {
        if (await attempt(ip, port)) {
          answeredAt[ip] = Date.now()
          return
        }
      }
    }),
  )
  process.stdout.write(JSON.stringify({ answeredAt }) + '\n')
}

const [mode, ...args] = process.argv.slice(2)
if (mode === 'dhcp') await dhcp(args[0], Number(args[1]))
else if (mode === 'connect') await connectAll(Number(args[0]), Number(args[1]), args.slice(2))
else throw new Error('usage: net-probes.js dhcp <mac> <timeout-ms> | connect <port> <timeout-ms> <ip>…')
