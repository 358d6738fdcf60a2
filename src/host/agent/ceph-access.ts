/**
 * A host's access to Ceph, learnt from the control plane at start (docs/ceph.md): the cluster's ceph.conf and the
 * host's own cephx user and key, written as `<root>/var/lib/pcc/ceph/{ceph.conf,keyring}` (0600), the conf naming
 * the keyring so `rbd` and QEMU's rbd driver need no key on a command line. A cloud without Ceph answers 404: the
 * host then keeps its data in files.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { clientConf, type CephClient } from '../../lib/ceph/rbd.js'
import { HttpError } from './http.js'

export interface CephAccess {
  client: CephClient
  pools: { images: string; volumes: string; vms: string }
}

interface Answer {
  conf: string
  user: string
  key: string
  pools: CephAccess['pools']
}

export async function learnCephAccess(root: string, api: <T>(method: string, path: string) => Promise<T>): Promise<CephAccess | undefined> {
  let answer: Answer
  try {
    answer = await api<Answer>('GET', '/ceph')
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return undefined
    throw err
  }
  const dir = join(root, 'var/lib/pcc/ceph')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const keyring = join(dir, 'keyring')
  writeFileSync(keyring, `[client.${answer.user}]\n\tkey = ${answer.key}\n`, { mode: 0o600 })
  return { client: clientConf(answer.conf, answer.user, keyring, join(dir, 'ceph.conf')), pools: answer.pools }
}
