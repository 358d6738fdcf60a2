/**
 * The guest spec a driver gets. Every driver gets the server's own facts (guestSpec in context.ts); a driver that
 * runs real guests (`guestDetails`) also gets what the hypervisor cannot know by itself: the image's formats,
 * digests and `hw_*` properties (and its kernel and ramdisk images), the NICs of the server's ports, and the config
 * drive's files from the metadata module. Simulated hosts skip these reads, so their builds stay as cheap as before.
 */
import { AppError } from '../../contracts/errors.js'
import { isVolumeBacked } from '../compute/block-devices.js'
import { DriverError, type ComputeDriver, type GuestImageRef, type GuestSpec } from '../../contracts/host/compute-driver.js'
import type { ImageRecord } from '../image/model.js'
import { metadataFiles } from '../metadata/documents.js'
import { instanceFacts } from '../metadata/load.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
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
async function findImageRef(ctx: ConductorContext, imageId: string | null | undefined): Promise<GuestImageRef | null> {
  if (!imageId || !ctx.storage) return null
  const image = await ctx.storage.images.getById(imageId)
  return image ? imageRef(image) : null
}

/**
 * An image the server names beside its own (a rescue image, its image's kernel and ramdisk), as a driver needs it,
 * when the server's project may use it: visible to the project and active. Null otherwise. Nova reads these with
 * the user's context; without the check a project could have another project's private image booted, as a
 * rescue disk or loaded into its guest's memory as a kernel or initrd, and read it from there.
 */
export async function usableImageRef(ctx: ConductorContext, server: Pick<ServerTable, 'project_id'>, imageId: string): Promise<GuestImageRef | null> {
  if (!ctx.storage) return null
  const image = await ctx.storage.images.getVisibleImage(server.project_id, 'project', imageId).catch((err: unknown) => {
    if (err instanceof AppError) return null
    throw err
  })
  return image && imageRef(image)
}

/** The kernel or ramdisk image an image names (`kernel_id`, `ramdisk_id`); a DriverError when the server may not use it. */
async function bootFile(ctx: ConductorContext, server: ServerTable, image: GuestImageRef | null, property: 'kernel_id' | 'ramdisk_id'): Promise<GuestImageRef | null> {
  const id = image?.properties[property]
  if (!id) return null
  const ref = await usableImageRef(ctx, server, id)
  if (!ref) throw new DriverError(`Image ${id} (${property} of image ${image.id}) could not be found.`, 400)
  return ref
}

/**
 * The volume_image_metadata of the server's boot volume (boot index 0), when it boots from one made of an image:
 * the properties Nova reads a volume-backed instance's hardware from. Null otherwise.
 */
async function bootVolumeImage(ctx: ConductorContext, serverId: string): Promise<Record<string, string> | null> {
  const row = await ctx.store.db
    .selectFrom('block_device_mappings')
    .innerJoin('volumes', 'volumes.id', 'block_device_mappings.volume_id')
    .select('volumes.image_metadata')
    .where('block_device_mappings.server_id', '=', serverId)
    .where('block_device_mappings.boot_index', '=', 0)
    .where('block_device_mappings.destination_type', '=', 'volume')
    .executeTakeFirst()
  return row?.image_metadata ? (JSON.parse(row.image_metadata) as Record<string, string>) : null
}

export async function specFor(ctx: ConductorContext, driver: ComputeDriver, server: ServerTable, options: SpecOptions = {}): Promise<GuestSpec> {
  const imageId = options.imageId !== undefined ? options.imageId : server.image_id
  const spec: GuestSpec = { ...guestSpec(server, options.flavor), imageId }
  if (!driver.guestDetails) return spec
  // A volume-backed server boots from its volume: the image it names (one that maps volume snapshots) is no root disk.
  const ownImageOfVolumeBacked = options.imageId === undefined && (await isVolumeBacked(ctx.store.db, server.id))
  const image = ownImageOfVolumeBacked ? null : await findImageRef(ctx, imageId)
  const facts = await instanceFacts(ctx.store.db, { ...server, image_id: imageId })
  const files = metadataFiles(facts, { adminPass: options.adminPass })
  return {
    ...spec,
    image,
    ...(!image && { bootVolumeImage: await bootVolumeImage(ctx, server.id) }),
    kernel: await bootFile(ctx, server, image, 'kernel_id'),
    ramdisk: await bootFile(ctx, server, image, 'ramdisk_id'),
    nics: facts.nics.map((n) => ({ portId: n.portId, macAddress: n.macAddress, networkId: n.networkId, mtu: n.mtu })),
    configDrive: Object.fromEntries(Object.entries(files).map(([path, content]) => [path, content.toString('base64')])),
  }
}
