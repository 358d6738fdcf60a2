/**
 * The guest spec a driver gets. Every driver gets the server's own facts (guestSpec in context.ts); a driver that
 * runs real guests (`guestDetails`) also gets what the hypervisor cannot know by itself: the image's formats,
 * digests and `hw_*` properties (and its kernel and ramdisk images), the NICs of the server's ports, and the config
 * drive's files from the metadata module. Simulated hosts skip these reads, so their builds stay as cheap as before.
 */
import type { ComputeDriver, GuestImageRef, GuestSpec } from '../drivers/compute/driver.js'
import type { ImageRecord } from '../image/model.js'
import { metadataFiles } from '../metadata/documents.js'
import { instanceFacts } from '../metadata/load.js'
import type { FlavorSnapshot, ServerTable } from '../storage/tables/compute.js'
import { guestSpec, type ConductorContext } from './context.js'

export interface SpecOptions {
  flavor?: FlavorSnapshot
  /** The image to build the root disk from, when not the server's (rebuild, unshelve). */
  imageId?: string | null
  /** The admin password for the config drive (create, rebuild, evacuate). */
  adminPass?: string
}

export function imageRef(image: ImageRecord): GuestImageRef {
  return {
    id: image.id,
    diskFormat: image.diskFormat ?? 'raw',
    containerFormat: image.containerFormat ?? 'bare',
    size: image.size,
    virtualSize: image.virtualSize,
    checksum: image.checksum,
    osHashAlgo: image.osHashAlgo,
    osHashValue: image.osHashValue,
    properties: image.properties,
  }
}

/** The image with that id as a driver needs it; null when there is none (or no image service is wired). */
export async function findImageRef(ctx: ConductorContext, imageId: string | null | undefined): Promise<GuestImageRef | null> {
  if (!imageId || !ctx.storage) return null
  const image = await ctx.storage.images.getById(imageId)
  return image ? imageRef(image) : null
}

export async function specFor(ctx: ConductorContext, driver: ComputeDriver, server: ServerTable, options: SpecOptions = {}): Promise<GuestSpec> {
  const imageId = options.imageId !== undefined ? options.imageId : server.image_id
  const spec: GuestSpec = { ...guestSpec(server, options.flavor), imageId }
  if (!driver.guestDetails) return spec
  const image = await findImageRef(ctx, imageId)
  const facts = await instanceFacts(ctx.store.db, { ...server, image_id: imageId })
  const files = metadataFiles(facts, { adminPass: options.adminPass })
  return {
    ...spec,
    image,
    kernel: await findImageRef(ctx, image?.properties.kernel_id),
    ramdisk: await findImageRef(ctx, image?.properties.ramdisk_id),
    nics: facts.nics.map((n) => ({ portId: n.portId, macAddress: n.macAddress, networkId: n.networkId, mtu: n.mtu })),
    configDrive: Object.fromEntries(Object.entries(files).map(([path, content]) => [path, content.toString('base64')])),
  }
}
