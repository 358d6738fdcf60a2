/**
 * Finds the master key (PCC_MASTER_KEY, or data-dir/master.key created 0600 on first start) and checks it
 * against the store, so a process started with another key stops with a clear message instead of failing
 * later on every secret it reads.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Store } from '../storage/store.js'
import { SecretBox } from './secret-box.js'

const CHECK_KEY = 'master_key_check'
const CHECK_TEXT = 'pcc master key check'

export class MasterKeyError extends Error {
  override name = 'MasterKeyError'
}

export function loadMasterKey(dataDir: string, configured: string | undefined): Buffer {
  if (configured) return Buffer.from(configured, 'base64')
  const file = join(dataDir, 'master.key')
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')
    if (key.length !== 32) throw new MasterKeyError(`${file} does not hold a base64 32-byte key`)
    return key
  }
  const key = randomBytes(32)
  writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
  return key
}

/** Records the key's check value on first use; afterwards verifies that this key opens it. */
export async function verifyMasterKey(store: Store, box: SecretBox): Promise<void> {
  const row = await store.db.selectFrom('pcc_meta').select('value').where('key', '=', CHECK_KEY).executeTakeFirst()
  if (!row) {
    await store.db.insertInto('pcc_meta').values({ key: CHECK_KEY, value: box.seal(CHECK_TEXT) }).onConflict((oc) => oc.column('key').doNothing()).execute()
    return verifyMasterKey(store, box).catch(() => {
      throw new MasterKeyError('another process initialised this database with a different master key at the same time')
    })
  }
  let text: string
  try {
    text = box.openText(row.value)
  } catch {
    text = ''
  }
  if (text !== CHECK_TEXT) {
    throw new MasterKeyError('the master key does not match this database: set PCC_MASTER_KEY (or data-dir/master.key) to the key it was created with')
  }
}
