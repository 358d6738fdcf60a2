/**
 * The driver conformance suite over the QEMU driver with guests' disks as RBD images in a real Ceph cluster (Nova's
 * images_type = rbd): booting clones the image's snapshot, moves and evacuations keep the disks where they are,
 * only a destroy removes them. The hosts speak to Ceph as real hosts do, each with the caps a host's cephx user gets.
 */
import { after } from 'node:test'
import { driverConformance } from '../../src/host/compute/conformance/suite.js'
import { freshPccPools, testCeph } from '../../src/testkit/ceph.js'
import { qemuHarness } from '../../src/testkit/qemu-harness.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'

const cluster = realGuestsMissing() ?? (await testCeph())
let removePools: (() => Promise<void>) | undefined
after(async () => removePools?.())

driverConformance(
  'qemu, disks in Ceph',
  async () => {
    if (typeof cluster === 'string') throw new Error(cluster)
    const pools = await freshPccPools(cluster)
    removePools = pools.remove
    return qemuHarness({ cluster, pools })
  },
  { skip: typeof cluster === 'string' && cluster, sharedDisks: true },
)
