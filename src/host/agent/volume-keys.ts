/**
 * The hypervisor's side of volume connections: commands name a volume's NBD export without its TLS-PSK key, so
 * before the driver connects, the agent fetches each connection (key included) from its own host endpoint
 * `{base}/resmgr/v1/hosts/{id}/volume-connections/{attachment_id}`, which answers only for attachments on this
 * host. The key never rides in the command channel, whose rows other processes read.
 */
import type { GuestSpec, VolumeConnection, VolumeConnectionInfo } from '../../contracts/host/compute-driver.js'

type Api = <T>(method: string, path: string) => Promise<T>

async function withKey(api: Api, volume: VolumeConnection): Promise<VolumeConnection> {
  const attachmentId = volume.connection?.data.attachment_id
  if (!attachmentId) return volume
  const answer = await api<{ connection_info: VolumeConnectionInfo }>('GET', `/volume-connections/${attachmentId}`)
  return { ...volume, connection: answer.connection_info }
}

/** The command's arguments with every volume connection's key filled in (the arguments as they are otherwise). */
export async function withVolumeKeys<A extends { volume?: VolumeConnection; spec?: GuestSpec }>(api: Api, args: A): Promise<A> {
  const out = { ...args }
  if (out.volume) out.volume = await withKey(api, out.volume)
  const spec = out.spec
  if (spec?.volumes) out.spec = { ...spec, volumes: await Promise.all(spec.volumes.map((v) => withKey(api, v))) }
  return out
}
