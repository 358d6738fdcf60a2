/**
 * PCC_TLS=auto: a private CA and a server certificate signed by it, generated once in data-dir/tls and reused.
 * Clients trust the CA file the server prints (kubectl's certificate-authority, openstack's --os-cacert).
 */
import { webcrypto } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join } from 'node:path'
import { x509 } from '../crypto/x509.js'

type CryptoKey = webcrypto.CryptoKey
type CryptoKeyPair = webcrypto.CryptoKeyPair

export interface TlsFiles {
  caFile: string
  certFile: string
  keyFile: string
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000

async function exportKey(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key)
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n')
  return `-----BEGIN PRIVATE KEY-----\n${b64}\n-----END PRIVATE KEY-----\n`
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64')
  return (await webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign'])) as unknown as CryptoKey
}

/** Ensures a CA and a server certificate for `hosts` exist in `dir`; regenerates the server one when its names change. */
export async function ensureAutoTls(dir: string, hosts: string[]): Promise<TlsFiles> {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const files = { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key') }
  const caKeyFile = join(dir, 'ca.key')
  const namesFile = join(dir, 'server.names')
  const names = [...new Set(hosts)].sort().join(',')
  if (existsSync(files.caFile) && existsSync(files.certFile) && existsSync(files.keyFile) && existsSync(namesFile) && readFileSync(namesFile, 'utf8') === names) {
    return files
  }
  const now = new Date()
  let caCert: x509.X509Certificate
  let caKey: CryptoKey
  if (existsSync(files.caFile) && existsSync(caKeyFile)) {
    caCert = new x509.X509Certificate(readFileSync(files.caFile, 'utf8'))
    caKey = await importKey(readFileSync(caKeyFile, 'utf8'))
  } else {
    const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as CryptoKeyPair
    caKey = keys.privateKey
    caCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: Date.now().toString(16),
      name: 'CN=pcc local CA',
      notBefore: now,
      notAfter: new Date(now.getTime() + TEN_YEARS_MS),
      keys,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    })
    writeFileSync(caKeyFile, await exportKey(caKey), { mode: 0o600 })
    writeFileSync(files.caFile, caCert.toString('pem') + '\n')
  }
  const serverKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as CryptoKeyPair
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: (Date.now() + 1).toString(16),
    subject: `CN=${hosts[0] ?? 'localhost'}`,
    issuer: caCert.subject,
    notBefore: now,
    notAfter: new Date(now.getTime() + TEN_YEARS_MS),
    signingKey: caKey,
    publicKey: serverKeys.publicKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(hosts.map((h) => (isIP(h) ? { type: 'ip', value: h } : { type: 'dns', value: h }))),
    ],
  })
  writeFileSync(files.keyFile, await exportKey(serverKeys.privateKey), { mode: 0o600 })
  writeFileSync(files.certFile, cert.toString('pem') + '\n' + caCert.toString('pem') + '\n')
  writeFileSync(namesFile, names)
  return files
}
