/** What the benches of real guests on a real Ceph cluster need first: a machine that runs guests, then the cluster. */
import { realGuestsMissing } from '../src/testkit/qemu.js'
import { testCeph, type CephCluster } from '../src/testkit/ceph.js'

export async function cephForGuests(): Promise<CephCluster> {
  const missing = realGuestsMissing()
  if (missing) throw new Error(`real guests cannot run here: ${missing}`)
  const cluster = await testCeph()
  if (typeof cluster === 'string') throw new Error(`no Ceph here: ${cluster}`)
  return cluster
}
