/**
 * The standard metadata definition namespaces Glance ships (its etc/metadefs files, kept as they are in
 * ./metadefs/), loaded at start: each one missing is created as its file says (public when the file does not say),
 * with its properties, objects and resource type associations, owned by no project. A namespace already there is left as it is, whatever an admin changed in it
 * (docs/image-volume.md, "Metadata definitions").
 */
import { AppError } from '../../contracts/errors.js'
import { isUniqueViolation } from '../storage/errors.js'
import type { Db } from '../storage/store.js'
import { createNamespace, type NamespaceInput } from './metadefs.js'
import cpuPinning from './metadefs/compute-cpu-pinning.json' with { type: 'json' }
import guestShutdown from './metadefs/compute-guest-shutdown.json' with { type: 'json' }
import hypervisor from './metadefs/compute-hypervisor.json' with { type: 'json' }
import libvirtImage from './metadefs/compute-libvirt-image.json' with { type: 'json' }
import quota from './metadefs/compute-quota.json' with { type: 'json' }
import randomgen from './metadefs/compute-randomgen.json' with { type: 'json' }
import vcpuTopology from './metadefs/compute-vcputopology.json' with { type: 'json' }
import watchdog from './metadefs/compute-watchdog.json' with { type: 'json' }
import signatures from './metadefs/image-signature-verification.json' with { type: 'json' }
import operatingSystem from './metadefs/operating-system.json' with { type: 'json' }
import runtimes from './metadefs/software-runtimes.json' with { type: 'json' }
import volumeType from './metadefs/storage-volume-type.json' with { type: 'json' }

export const STANDARD_NAMESPACES: readonly NamespaceInput[] = [
  cpuPinning, guestShutdown, hypervisor, libvirtImage, quota, randomgen, vcpuTopology, watchdog, signatures, operatingSystem, runtimes, volumeType,
] as NamespaceInput[]

/**
 * Creates the standard namespaces that do not exist yet; safe to run by several processes at once. Each namespace
 * is created in a transaction of its own, so one another process created first (our insert hits its name, or
 * our check sees it) is whole, and is skipped rather than retried: replicas starting together would otherwise
 * keep colliding, one namespace further each time.
 */
export async function ensureStandardNamespaces(db: Db, now = Date.now()): Promise<void> {
  const present = new Set((await db.selectFrom('metadef_namespaces').select('namespace').execute()).map((r) => r.namespace))
  for (const ns of STANDARD_NAMESPACES) {
    if (present.has(ns.namespace)) continue
    await createNamespace(db, { visibility: 'public', ...ns, owner: null }, now).catch((err: unknown) => {
      if (!isUniqueViolation(err) && !(err instanceof AppError && err.code === 'conflict')) throw err
    })
  }
}
