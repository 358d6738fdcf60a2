/**
 * The actions that build a guest again from an image with a new admin password: rebuild (on its host), rescue
 * (a rescue image in front of its disk) and evacuate (on another host, its own being down).
 */
import { badRequest, notFound } from '../../../contracts/errors.js'
import type { ApiVersion } from '../../../contracts/compute/versions.js'
import type { FlavorSnapshot } from '../../../contracts/host/compute-driver.js'
import type { ServerTable } from '../../storage/schema.js'
import type { BootImage } from '../images.js'
import { generatePassword } from '../server-create.js'
import { checkMetadataQuota } from '../quotas.js'
import { parseFlavor } from '../server-model.js'
import { isVolumeBacked } from '../block-devices.js'
import { accessIpv6 } from '../access-ips.js'
import { accept, type ActionHandler } from './common.js'

/**
 * The image a rebuild asks for, against the server (nova/compute/api.py rebuild): a volume-backed server keeps
 * its image below 2.93, and the flavor must hold the image's min_disk and min_ram.
 */
function checkRebuildImage(api: ApiVersion, image: BootImage, flavor: FlavorSnapshot, volumeBacked: boolean): void {
  if (volumeBacked && !api.has('volumeBackedRebuild')) {
    throw badRequest(`Image ${image.id} is unacceptable: Unable to rebuild with a different image for a volume-backed server.`)
  }
  if (!volumeBacked && flavor.disk > 0 && image.minDiskGb > flavor.disk) throw badRequest("Flavor's disk is too small for requested image.")
  if (image.minRamMb > flavor.ram) throw badRequest("Flavor's memory is too small for requested image.")
}

export const rebuild: ActionHandler<'rebuild'> = async (ctx) => {
  const { deps, api, caller, row, value: v } = ctx
  const db = deps.db
  const image = await deps.images.find(v.imageRef, row.project_id, caller.visibility)
  if (!image) throw badRequest('Can not find requested image')
  const volumeBacked = await isVolumeBacked(db, row.id)
  checkRebuildImage(api, image, parseFlavor(row.flavor), volumeBacked)
  if (v.metadata) await checkMetadataQuota(db, row.project_id, Object.keys(v.metadata).length)
  // A volume-backed server keeps showing no image: the new one is written to its root volume.
  const changes: Partial<ServerTable> = volumeBacked ? {} : { image_id: v.imageRef }
  if (v.name !== undefined) changes.name = v.name
  if (v.metadata !== undefined) changes.metadata = JSON.stringify(v.metadata)
  if (v.accessIPv4 !== undefined) changes.access_ip_v4 = v.accessIPv4
  if (v.accessIPv6 !== undefined) changes.access_ip_v6 = accessIpv6(v.accessIPv6)
  if (v['OS-DCF:diskConfig'] !== undefined) changes.disk_config = v['OS-DCF:diskConfig']
  if (v.description !== undefined) changes.description = v.description
  if (v.user_data !== undefined) changes.user_data = v.user_data
  if (v.hostname !== undefined) changes.hostname = v.hostname
  if (v.trusted_image_certificates !== undefined) changes.trusted_image_certificates = v.trusted_image_certificates ? JSON.stringify(v.trusted_image_certificates) : null
  if (v.key_name !== undefined) {
    if (v.key_name === null) Object.assign(changes, { key_name: null, key_data: null })
    else {
      const kp = await db.selectFrom('keypairs').select('public_key').where('user_id', '=', row.user_id).where('name', '=', v.key_name).executeTakeFirst()
      if (!kp) throw badRequest('Invalid key_name provided.')
      Object.assign(changes, { key_name: v.key_name, key_data: kp.public_key })
    }
  }
  const adminPass = v.adminPass ?? generatePassword()
  const server = await accept(ctx, { ...v, adminPass, ...(volumeBacked && { volumeBacked }) }, changes)
  return { status: 202, server, adminPass }
}

export const rescue: ActionHandler<'rescue'> = async (ctx) => {
  const { value } = ctx
  const adminPass = value?.adminPass ?? generatePassword()
  await accept(ctx, { adminPass, rescueImageRef: value?.rescue_image_ref ?? null })
  return { status: 200, body: { adminPass } }
}

export const evacuate: ActionHandler<'evacuate'> = async (ctx) => {
  const { deps, api, row, value: v } = ctx
  if (v.host !== undefined) {
    const target = await deps.hostUp(v.host)
    if (target === undefined) throw notFound(`Compute host ${v.host} could not be found.`)
    if (v.host === row.host) throw badRequest('The target host can\'t be the same one.')
  }
  if (row.host && (await deps.hostUp(row.host))) throw badRequest(`Compute service of ${row.host} is still in use.`)
  const adminPass = v.adminPass ?? generatePassword()
  await accept(ctx, { host: v.host ?? null, adminPass })
  return api.has('evacuateNoAdminPass') ? { status: 200 } : { status: 200, body: { adminPass } }
}
