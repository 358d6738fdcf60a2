/**
 * The local address this host uses to reach the control plane: as a rule, where the other hosts of its network
 * reach it too (a storage host's NBD exports, a hypervisor's VXLAN endpoint, unless agent.json names another).
 */
import { createSocket } from 'node:dgram'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'

export async function sourceAddressTowards(controller: string): Promise<string> {
  const url = new URL(controller)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const address = isIP(host) ? host : (await lookup(host)).address
  const socket = createSocket(isIP(address) === 6 ? 'udp6' : 'udp4')
  return new Promise((resolve, reject) => {
    // A UDP "connect" sends nothing; it only picks the route, and with it the source address.
    socket.connect(Number(url.port) || 443, address, () => {
      const local = socket.address().address
      socket.close()
      resolve(local)
    })
    socket.once('error', (err) => {
      socket.close()
      reject(err)
    })
  })
}
