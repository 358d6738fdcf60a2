/**
 * The metadata service's answers (what a guest reads at 169.254.169.254), as Nova's metadata handler gives them
 * (nova/api/metadata/base.py `lookup`, handler.py `ec2_md_print`): the same documents the config drive carries
 * (documents.ts), laid out as paths.
 *
 * - `/` lists the EC2 versions; `/openstack` the OpenStack versions; `/openstack/<version>` the files of that
 *   version (plus `password`: what the guest posted there, password.ts); `/openstack/<version>/<file>` a file.
 * - `/<version>` is `meta-data/` and `user-data`; `/<version>/meta-data/…` walks the EC2 tree: an object lists its
 *   keys (`key/` for a sub-tree; a public key as `0=<name>`), a list its items one per line, a value itself.
 * - Anything else, an unknown version, or a file the guest has not got (no user data) is 404.
 */
import { posix } from 'node:path'
import { ec2MetaData, metadataFiles, OPENSTACK_VERSIONS, userDataBytes, type InstanceFacts } from './documents.js'

export interface MetadataReply {
  status: number
  contentType: string
  body: Buffer
}

/** The EC2 versions Nova's metadata service lists (base.py VERSIONS), then `latest`. */
const EC2_SERVICE_VERSIONS = ['1.0', '2007-01-19', '2007-03-01', '2007-08-29', '2007-10-10', '2007-12-15', '2008-02-01', '2008-09-01', '2009-04-04', 'latest']

const TEXT = 'text/plain; charset=UTF-8'
const text = (body: string): MetadataReply => ({ status: 200, contentType: TEXT, body: Buffer.from(body) })
const NOT_FOUND: MetadataReply = { status: 404, contentType: TEXT, body: Buffer.from('404 Not Found\n\nThe resource could not be found.\n') }

/** Nova's ec2_md_print: how a node of the EC2 tree reads. */
function ec2Print(node: unknown): string {
  if (Array.isArray(node)) return node.map(String).join('\n')
  if (node !== null && typeof node === 'object') {
    return Object.keys(node)
      .filter((k) => k !== '_name')
      .sort()
      .map((k) => {
        const child = (node as Record<string, unknown>)[k]
        if (child !== null && typeof child === 'object' && !Array.isArray(child)) return '_name' in child ? String((child as { _name: unknown })._name) : `${k}/`
        return k
      })
      .join('\n')
  }
  return node === null || node === undefined ? '' : String(node)
}

function openstack(facts: InstanceFacts, tokens: string[], password: string): MetadataReply {
  if (tokens.length === 0) return text([...OPENSTACK_VERSIONS, 'latest'].join('\n'))
  const [version, file, ...rest] = tokens
  if (![...OPENSTACK_VERSIONS, 'latest'].includes(version as never) || rest.length > 0) return NOT_FOUND
  const files = metadataFiles(facts)
  const prefix = `openstack/${version}/`
  const names = Object.keys(files).filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length))
  if (file === undefined) return text([...names, 'password'].sort().join('\n'))
  if (file === 'password') return text(password)
  const body = files[prefix + file]
  if (!body) return NOT_FOUND
  return { status: 200, contentType: file.endsWith('.json') ? 'application/json' : 'application/octet-stream', body }
}

function ec2(facts: InstanceFacts, tokens: string[]): MetadataReply {
  const [version, section, ...rest] = tokens
  if (!EC2_SERVICE_VERSIONS.includes(version)) return NOT_FOUND
  const userData = userDataBytes(facts)
  if (section === undefined) return text(userData ? 'meta-data/\nuser-data' : 'meta-data/')
  if (section === 'user-data') return userData && rest.length === 0 ? { status: 200, contentType: 'application/octet-stream', body: userData } : NOT_FOUND
  if (section !== 'meta-data') return NOT_FOUND
  const tree = ec2MetaData(facts)
  // Nova names a key's listing `0=<key name>`.
  if (facts.key && tree['public-keys']) tree['public-keys'] = { '0': { _name: `0=${facts.key.name}`, 'openssh-key': facts.key.publicKey } }
  let node: unknown = tree
  for (const key of rest) {
    // Own keys only: `constructor` or `__proto__` are no part of the tree.
    if (node === null || typeof node !== 'object' || Array.isArray(node) || !Object.hasOwn(node, key)) return NOT_FOUND
    node = (node as Record<string, unknown>)[key]
  }
  return text(ec2Print(node))
}

const tokensOf = (path: string) => posix.normalize(`/${path.split('?')[0]}`).split('/').filter(Boolean)

/** Whether `path` is a version's `password` (`/openstack/<version>/password`): the one path a guest may POST to. */
export function isPasswordPath(path: string): boolean {
  const tokens = tokensOf(path)
  return tokens.length === 3 && tokens[0] === 'openstack' && [...OPENSTACK_VERSIONS, 'latest'].includes(tokens[1] as never) && tokens[2] === 'password'
}

/**
 * The answer to `path` (the request's path, query dropped) for the guest `facts` describe; `password` is what
 * that guest posted (password.ts), read back at `/openstack/<version>/password`.
 */
export function answerMetadata(facts: InstanceFacts, path: string, password = ''): MetadataReply {
  const tokens = tokensOf(path)
  if (tokens.length === 0) return text(EC2_SERVICE_VERSIONS.join('\n'))
  return tokens[0] === 'openstack' ? openstack(facts, tokens.slice(1), password) : ec2(facts, tokens)
}
