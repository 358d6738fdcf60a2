/**
 * @peculiar/x509, ready to use: Node's WebCrypto as its provider, and the Reflect metadata API its service
 * container (tsyringe) needs. Import `x509` from here, not from the package.
 */
import 'reflect-metadata'
import { webcrypto } from 'node:crypto'
import * as x509 from '@peculiar/x509'

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])

export { x509 }
