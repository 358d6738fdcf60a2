/**
 * The control plane's link to Ceph (docs/ceph.md): with PCC_CEPH_CONF set, pcc-server speaks to the cluster as
 * PCC_CEPH_USER with PCC_CEPH_KEYRING, through a ceph.conf of its own under the data dir that names that keyring
 * (for `rbd` and QEMU alike). Start-up checks every pool answers, so a cluster that is down, a wrong key or a
 * missing pool is one clear line before anything is served.
 */
import { accessSync, constants, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CephError, clientConf, Rbd } from '../../lib/ceph/rbd.js'
import type { Config } from '../config/settings.js'

export interface CephPools {
  images: string
  volumes: string
  vms: string
}

export interface CephLink {
  rbd: Rbd
  pools: CephPools
  /** The cluster's ceph.conf as the operator gave it (hosts get it with their own keyring). */
  clusterConf: string
}

const ENOENT = 2
const EPERM = 1
const EACCES = 13

/** Reads the settings and checks each pool; throws a CephError saying what to fix. Undefined without PCC_CEPH_CONF. */
export async function connectCeph(config: Config): Promise<CephLink | undefined> {
  if (config.cephConf === undefined) return undefined
  let clusterConf: string
  try {
    clusterConf = readFileSync(config.cephConf, 'utf8')
    accessSync(config.cephKeyring, constants.R_OK)
  } catch (err) {
    const path = (err as NodeJS.ErrnoException).path ?? config.cephConf
    const setting = path === config.cephConf ? 'PCC_CEPH_CONF' : 'PCC_CEPH_KEYRING'
    throw new CephError(`${setting}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  const rbd = new Rbd(clientConf(clusterConf, config.cephUser, config.cephKeyring, join(config.dataDir, 'ceph', 'client.conf')))
  const pools = { images: config.cephImagesPool, volumes: config.cephVolumesPool, vms: config.cephVmsPool }
  for (const pool of new Set(Object.values(pools))) {
    await rbd.check(pool).catch((err: CephError) => {
      if (err.errno === ENOENT) throw new CephError(`the Ceph pool ${pool} does not exist: create it with \`ceph osd pool create ${pool} && rbd pool init ${pool}\``)
      if (err.errno === EPERM || err.errno === EACCES) throw new CephError(`client.${config.cephUser} may not use the Ceph pool ${pool} (${err.message}): give it \`profile rbd pool=${pool}\` (docs/ceph.md)`)
      throw new CephError(`Ceph is not reachable with ${config.cephConf} as client.${config.cephUser}: ${err.message}`)
    })
  }
  return { rbd, pools, clusterConf }
}
