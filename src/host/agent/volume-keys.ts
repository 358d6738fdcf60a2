/**
 * The hypervisor's side of volume connections: commands name a volume's NBD export without its TLS-PSK key, so
 * before the driver connects, the agent fetches each connection (key included) from its own host endpoint
 * `{base}/resmgr/v1/hosts/{id}/volume-connections/{attachment_id}`, which answers only for attachments on this
 * host. The key never rides in the command channel, whose rows other processes read. A Ceph volume has no key: its
 * connection names the host's own cephx user, and the agent adds the ceph.conf it learnt (ceph-access.ts).
 */
import type { GuestSpec, VolumeConnection, VolumeConnectionInfo } from '../../contracts/host/compute-driver.js'

type Api = <T>(method: string, path: string) => Promise<T>

async function withKey(api: Api, volume: VolumeConnection, cephConf: string | undefined): Promise<VolumeConnection> {
  const attachmentId = volume.connection?.data.attachment_id
  if (!attachmentId) return volume
  const { connection_info: info } = await api<{ connection_info: VolumeConnectionInfo }>('GET', `/volume-connections/${attachmentId}`)
  if (info.driver_volume_type === 'rbd') return { ...volume, connection: { ...info, data: { ...info.data, conf: cephConf } } }
  return { ...volume, connection: info }
}

/** The command's arguments with every volume connection's key filled in (the arguments as they are otherwise). */
export async function withVolumeKeys<A extends { volume?: VolumeConnection; spec?: GuestSpec }>(api: Api, args: A, cephConf?: string): Promise<A> {
  const out = { ...args }
  if (out.volume) out.volume = await withKey(api, out.volume, cephConf)
  const spec = out.spec
  if (spec?.volumes) out.spec = { ...spec, volumes: await Promise.all(spec.volumes.map((v) => withKey(api, v, cephConf))) }
  return out
}
