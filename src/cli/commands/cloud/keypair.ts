/**
 * Native key pair commands (list, show, create, delete) with openstackclient 6.0's output. osc reads key pairs
 * through openstacksdk at compute microversion 2.10: a key pair is shown as the SDK resource's attributes (a
 * key the API did not send shows as None), keys are found by name only ("No Keypair found for x"), and
 * `keypair create` without --public-key prints the generated private key instead of a table.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import type { Session } from '../../../client/session.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import {
  LIST_OUTPUT_FLAGS, SHOW_OUTPUT_FLAGS, choiceFlag, deleteEach, intFlag, isNotFound, oneOf, printList, printShow, query, required, sdkWording, stringFlag, withSession,
} from './common.js'
import { fields, headers, rows, type Column } from './osc.js'

type Keypair = Record<string, unknown> & { name: string }

/** openstacksdk's Keypair resource speaks 2.10 (key types from 2.2, other users' keys from 2.10). */
const KEYPAIR_VERSION = { 'openstack-api-version': 'compute 2.10' }

const LIST_COLUMNS: Column<Keypair>[] = [
  { name: 'Name', from: 'name' },
  { name: 'Fingerprint', from: 'fingerprint' },
  { name: 'Type', from: 'type', missing: 'ssh' },
]

/** The SDK's attributes: `id` is the name, `deleted` is `is_deleted`, the public key is left out of shows. */
const FIELDS: Column<Keypair>[] = [
  { name: 'created_at' },
  { name: 'fingerprint' },
  { name: 'id', from: 'name' },
  { name: 'is_deleted', from: 'deleted' },
  { name: 'name' },
  { name: 'private_key' },
  { name: 'type', missing: 'ssh' },
  { name: 'user_id' },
]
const CREATED_FIELDS = FIELDS.filter((f) => f.name !== 'private_key')

function expandHome(path: string): string {
  return path.startsWith('~/') ? `${homedir()}${path.slice(1)}` : path
}

/** A key pair by name; the SDK's message when there is none. */
async function findKeypair(session: Session, name: string): Promise<Keypair> {
  const compute = await session.endpoint('compute')
  try {
    return (await session.get<{ keypair: Keypair }>(`${compute}/os-keypairs/${encodeURIComponent(name)}`, KEYPAIR_VERSION)).keypair
  } catch (err) {
    if (isNotFound(err)) throw new CliFailure(sdkWording('Keypair').notFound(name))
    throw err
  }
}

export const keypairList: CommandSpec = {
  words: ['keypair', 'list'],
  summary: 'list key fingerprints',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    { name: 'limit', type: 'string', help: 'maximum number of key pairs to display', placeholder: '<limit>' },
    { name: 'marker', type: 'string', help: 'the last key pair of the previous page (name)', placeholder: '<marker>' },
  ],
  run: (context, flags) => {
    const page = { limit: intFlag(flags, 'limit'), marker: stringFlag(flags, 'marker') }
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      // --limit and --marker are 2.35 features; the SDK asks for them at the version that has them.
      const version = page.limit !== undefined || page.marker ? { 'openstack-api-version': 'compute 2.35' } : KEYPAIR_VERSION
      const { keypairs } = await session.get<{ keypairs: { keypair: Keypair }[] }>(`${compute}/os-keypairs${query(page)}`, version)
      return printList(context, flags, headers(LIST_COLUMNS), rows(LIST_COLUMNS, keypairs.map((k) => k.keypair)))
    })
  },
}

export const keypairShow: CommandSpec = {
  words: ['keypair', 'show'],
  summary: 'display key details',
  flags: [...SHOW_OUTPUT_FLAGS, { name: 'public-key', type: 'boolean', help: 'show only bare public key paired with the generated key' }],
  positionals: ['key'],
  run: (context, flags, positionals) => {
    required(positionals, ['key'])
    return withSession(context, async (session) => {
      const keypair = await findKeypair(session, positionals[0])
      if (flags['public-key']) {
        context.stdout.write(String(keypair.public_key ?? ''))
        return 0
      }
      return printShow(context, flags, fields(FIELDS, keypair))
    })
  },
}

export const keypairCreate: CommandSpec = {
  words: ['keypair', 'create'],
  summary: 'create new public or private key for server ssh access',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'public-key', type: 'string', help: 'filename for public key to add; without it a private key is generated and printed', placeholder: '<file>' },
    { name: 'private-key', type: 'string', help: 'filename for the generated private key (instead of printing it)', placeholder: '<file>' },
    { name: 'type', type: 'string', help: 'keypair type: ssh or x509', placeholder: '<type>' },
  ],
  positionals: ['name'],
  run: (context, flags, positionals) => {
    required(positionals, ['name'])
    oneOf(flags, ['public-key', 'private-key'])
    const type = choiceFlag(flags, 'type', ['ssh', 'x509'])
    const publicKeyFile = stringFlag(flags, 'public-key')
    const privateKeyFile = stringFlag(flags, 'private-key')
    let publicKey: string | undefined
    if (publicKeyFile) {
      try {
        publicKey = readFileSync(expandHome(publicKeyFile), 'utf8')
      } catch (err) {
        throw new CliFailure(`Key file ${publicKeyFile} not found: ${(err as Error).message}`)
      }
    }
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const body = { keypair: { name: positionals[0], ...(publicKey !== undefined ? { public_key: publicKey } : {}), ...(type ? { type } : {}) } }
      const keypair = (await session.send<{ keypair: Keypair }>('POST', `${compute}/os-keypairs`, body, KEYPAIR_VERSION)).body.keypair
      if (privateKeyFile) {
        try {
          writeFileSync(expandHome(privateKeyFile), String(keypair.private_key ?? ''), { mode: 0o600 })
        } catch (err) {
          throw new CliFailure(`Key file ${privateKeyFile} can not be saved: ${(err as Error).message}`)
        }
      }
      // As nova's keypair-add did: a generated key is printed, since it can never be read again.
      if (!publicKey && !privateKeyFile) {
        context.stdout.write(String(keypair.private_key ?? ''))
        return 0
      }
      return printShow(context, flags, fields(CREATED_FIELDS, keypair))
    })
  },
}

export const keypairDelete: CommandSpec = {
  words: ['keypair', 'delete'],
  summary: 'delete public or private key(s)',
  flags: [],
  positionals: ['key'],
  variadic: true,
  run: (context, _flags, positionals) => {
    required(positionals, ['key'])
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      return deleteEach(context, positionals, async (name) => {
        await session.send('DELETE', `${compute}/os-keypairs/${encodeURIComponent(name)}`, undefined, KEYPAIR_VERSION)
      }, {
        failed: (x, reason) => `Failed to delete key with name '${x}': ${reason}`,
        summary: (n, total) => `${n} of ${total} keys failed to delete.`,
      })
    })
  },
}

export const KEYPAIR_COMMANDS: CommandSpec[] = [keypairList, keypairShow, keypairCreate, keypairDelete]
