/**
 * The driver conformance suite over the QEMU driver with its disks as files on the host (the harness:
 * src/testkit/qemu-harness.ts; over disks in Ceph: test/ceph/qemu-rbd-conformance.test.ts).
 */
import { driverConformance } from '../../src/host/compute/conformance/suite.js'
import { qemuHarness } from '../../src/testkit/qemu-harness.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'

driverConformance('qemu', () => qemuHarness(), { skip: realGuestsMissing() })
