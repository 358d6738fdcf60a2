/**
 * The OpenPGP key pair that support bundles are encrypted to. Created once (first start), kept in the store
 * with the private key sealed under the master key; hosts fetch the public key, admins fetch the private key
 * to read the bundles.
 */
import { generateKey } from 'openpgp'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'

const PUBLIC_KEY = 'support_public_key'
const PRIVATE_KEY = 'support_private_key'

export interface SupportKeys {
  publicKey: string
  privateKey(): Promise<string>
}

export async function ensureSupportKeys(store: Store, box: SecretBox): Promise<SupportKeys> {
  const read = async (key: string) => (await store.db.selectFrom('pcc_meta').select('value').where('key', '=', key).executeTakeFirst())?.value
  if (!(await read(PUBLIC_KEY))) {
    const { publicKey, privateKey } = await generateKey({ type: 'curve25519', userIDs: [{ name: 'pcc support', email: 'support@pcc.invalid' }], format: 'armored' })
    // Both rows or neither; when two processes race, the first pair wins and the other insert does nothing.
    await store.db.transaction().execute(async (tx) => {
      await tx.insertInto('pcc_meta').values({ key: PRIVATE_KEY, value: box.seal(privateKey) }).onConflict((oc) => oc.column('key').doNothing()).execute()
      await tx.insertInto('pcc_meta').values({ key: PUBLIC_KEY, value: publicKey }).onConflict((oc) => oc.column('key').doNothing()).execute()
    })
  }
  const publicKey = (await read(PUBLIC_KEY))!
  return { publicKey, privateKey: async () => box.openText((await read(PRIVATE_KEY))!) }
}
