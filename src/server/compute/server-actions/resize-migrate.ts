/** The actions that move a server to another flavor or host: resize and its confirmation, migrate, live migration. */
import { badRequest } from '../../../contracts/errors.js'
import type { ServerTable } from '../../storage/schema.js'
import { flavorSnapshot, requireFlavorForServer } from '../flavors.js'
import { quotaExceeded, quotaLimits, serverUsage } from '../quotas.js'
import { parseFlavor } from '../server-model.js'
import { accept, type ActionContext, type ActionHandler } from './common.js'

/** A migration's named destination: a compute host that is up, and not the server's own (400 otherwise, as Nova). */
async function requireTargetHost({ deps, row }: ActionContext, host: string): Promise<void> {
  const up = await deps.hostUp(host)
  if (up === undefined) throw badRequest(`Compute host ${host} could not be found.`)
  if (!up) throw badRequest(`Compute service of ${host} is unavailable at this time.`)
  if (host === row.host) throw badRequest(`Unable to migrate instance (${row.id}) to current host (${host}).`)
}

export const resize: ActionHandler<'resize'> = async (ctx) => {
  const { deps, caller, row, value: v } = ctx
  const db = deps.db
  const flavor = await requireFlavorForServer(db, v.flavorRef, row.project_id, caller.flavorVisibility)
  const current = parseFlavor(row.flavor)
  if (flavor.id === current.id) throw badRequest('When resizing, instances must change flavor!')
  const limits = await quotaLimits(db, row.project_id)
  if (limits.cores >= 0 || limits.ram >= 0) {
    const used = await serverUsage(db, row.project_id)
    const dCores = flavor.vcpus - current.vcpus
    const dRam = flavor.ram - current.ram
    if (limits.cores >= 0 && dCores > 0 && used.cores + dCores > limits.cores) throw quotaExceeded('cores', dCores, used.cores, limits.cores)
    if (limits.ram >= 0 && dRam > 0 && used.ram + dRam > limits.ram) throw quotaExceeded('ram', dRam, used.ram, limits.ram)
  }
  const snapshot = flavorSnapshot(flavor)
  const changes: Partial<ServerTable> = { new_flavor: JSON.stringify(snapshot), ...(v['OS-DCF:diskConfig'] ? { disk_config: v['OS-DCF:diskConfig'] } : {}) }
  await accept(ctx, { flavorRef: flavor.id, flavor: snapshot, diskConfig: v['OS-DCF:diskConfig'] }, changes)
  return { status: 202 }
}

export const confirmResize: ActionHandler = async (ctx) => {
  await accept(ctx, {})
  return { status: 204 }
}

/** Below 2.56 migrate takes any value (its schema's type is unknown): the host is read as it comes. */
export const migrate: ActionHandler<'migrate'> = async (ctx) => {
  const { caller, v } = ctx
  if (v.host) caller.authorize('os-migrate-server:migrate:host')
  if (v.host) await requireTargetHost(ctx, v.host as string)
  await accept(ctx, { host: v.host ?? null })
  return { status: 202 }
}

export const liveMigrate: ActionHandler<'os-migrateLive'> = async (ctx) => {
  // Nova checks a named destination before accepting (400), so a bad host leaves the server as it was.
  if (ctx.value.host) await requireTargetHost(ctx, ctx.value.host)
  await accept(ctx, ctx.value)
  return { status: 202 }
}
