/**
 * Key pairs: generating an RSA key in OpenSSH form or with a self-signed X.509 certificate (Nova's x509 type, for
 * WinRM), checking imported SSH public keys and X.509 certificates, and Nova's fingerprints (MD5 of the SSH key
 * blob, SHA-1 of the certificate; colon-separated hex).
 */
import { createHash, generateKeyPairSync, webcrypto, X509Certificate } from 'node:crypto'
import { badRequest } from '../../contracts/errors.js'
import { x509 } from '../crypto/x509.js'
import type { KeypairTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'

function sshString(buf: Buffer): Buffer {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(buf.length)
  return Buffer.concat([len, buf])
}

function mpint(b64url: string): Buffer {
  let buf = Buffer.from(b64url, 'base64url')
  if (buf[0] & 0x80) buf = Buffer.concat([Buffer.from([0]), buf])
  return sshString(buf)
}

const colonHex = (digest: Buffer) => [...digest].map((b) => b.toString(16).padStart(2, '0')).join(':')

export function generateSshKeypair(comment: string): { publicKey: string; privateKey: string; fingerprint: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const jwk = publicKey.export({ format: 'jwk' }) as { n: string; e: string }
  const blob = Buffer.concat([sshString(Buffer.from('ssh-rsa')), mpint(jwk.e), mpint(jwk.n)])
  return {
    publicKey: `ssh-rsa ${blob.toString('base64')} ${comment}`,
    privateKey: privateKey.export({ format: 'pem', type: 'pkcs1' }).toString(),
    fingerprint: colonHex(createHash('md5').update(blob).digest()),
  }
}

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 } as const
const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000

/**
 * Nova's generated x509 key pair: an RSA key and a self-signed client certificate for `commonName` (Nova uses the
 * user id), valid ten years. The certificate is the public key; the private key is PKCS#8 PEM, returned once.
 */
export async function generateX509Keypair(commonName: string): Promise<{ publicKey: string; privateKey: string; fingerprint: string }> {
  const keys = (await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
  const now = new Date()
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: createHash('sha1').update(`${commonName}${now.getTime()}${Math.random()}`).digest('hex').slice(0, 16),
    name: `CN=${commonName.replace(/[,+="<>#;\\]/g, '')}`,
    notBefore: now,
    notAfter: new Date(now.getTime() + TEN_YEARS_MS),
    keys: keys as unknown as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'],
    signingAlgorithm: RSA,
    extensions: [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  })
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  const privateKey = `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`
  return { publicKey: cert.toString('pem') + '\n', privateKey, fingerprint: colonHex(createHash('sha1').update(Buffer.from(cert.rawData)).digest()) }
}

const SSH_TYPES = ['ssh-rsa', 'ssh-dss', 'ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'sk-ssh-ed25519@openssh.com', 'sk-ecdsa-sha2-nistp256@openssh.com']

/** The fingerprint of an imported key, or a 400 naming what is wrong. */
export function fingerprintOf(type: 'ssh' | 'x509', publicKey: string): string {
  if (type === 'x509') {
    try {
      return colonHex(createHash('sha1').update(new X509Certificate(publicKey).raw).digest())
    } catch {
      throw badRequest('Keypair data is invalid: failed to generate fingerprint')
    }
  }
  const [kind, data] = publicKey.trim().split(/\s+/)
  if (!kind || !data || !SSH_TYPES.includes(kind) || !/^[A-Za-z0-9+/]+={0,2}$/.test(data)) throw badRequest('Keypair data is invalid: failed to generate fingerprint')
  const blob = Buffer.from(data, 'base64')
  if (blob.length < 4) throw badRequest('Keypair data is invalid: failed to generate fingerprint')
  const n = blob.readUInt32BE(0)
  if (blob.subarray(4, 4 + n).toString() !== kind) throw badRequest('Keypair data is invalid: failed to generate fingerprint')
  return colonHex(createHash('md5').update(blob).digest())
}

/** A user's key pair by name. */
export async function findKeypair(db: Db, userId: string, name: string): Promise<KeypairTable | undefined> {
  return db.selectFrom('keypairs').selectAll().where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()
}

/** A user's key pairs, by name. */
export async function listKeypairs(db: Db, userId: string): Promise<KeypairTable[]> {
  return db.selectFrom('keypairs').selectAll().where('user_id', '=', userId).orderBy('name').execute()
}

export async function countKeypairs(db: Db, userId: string): Promise<number> {
  return Number((await db.selectFrom('keypairs').select((eb) => eb.fn.countAll().as('n')).where('user_id', '=', userId).executeTakeFirst())?.n ?? 0)
}

/** Answers false when the user has a key pair of that name already. */
export async function insertKeypair(db: Db, row: KeypairTable): Promise<boolean> {
  const inserted = await db.insertInto('keypairs').values(row).onConflict((oc) => oc.columns(['user_id', 'name']).doNothing()).executeTakeFirst()
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0
}

export async function deleteKeypair(db: Db, id: string): Promise<void> {
  await db.deleteFrom('keypairs').where('id', '=', id).execute()
}
