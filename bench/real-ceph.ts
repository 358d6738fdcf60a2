/** What the benches of real guests on a real Ceph cluster need first: a machine that runs guests, then the cluster. */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { guestImage, realGuestsMissing } from '../src/testkit/qemu.js'
import { testCeph, type CephCluster } from '../src/testkit/ceph.js'

/** The guest image as a raw file in `dir`: on the Ceph layout, root disks of a raw image are clones of its snapshot. */
export async function rawGuestImage(dir: string): Promise<string> {
  const raw = join(dir, 'guest.raw')
  execFileSync('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', (await guestImage()).disk.path, raw])
  return raw
}

export async function cephForGuests(): Promise<CephCluster> {
  const missing = realGuestsMissing()
  if (missing) throw new Error(`real guests cannot run here: ${missing}`)
  const cluster = await testCeph()
  if (typeof cluster === 'string') throw new Error(`no Ceph here: ${cluster}`)
  return cluster
}
