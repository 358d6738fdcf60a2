/**
 * The ordered list of migrations. A migration is applied once, in order, inside a transaction; the list only
 * ever grows at the end (an applied migration is never edited). Several processes starting at once on one
 * PostgreSQL serialise on an advisory lock, so each migration runs exactly once.
 */
import { sql, type Kysely } from 'kysely'
import type { Store } from '../store.js'
import * as m0001 from './0001-foundation.js'
import * as m0010 from './0010-identity-auth.js'
import * as m0020 from './0020-compute.js'
import * as m0030 from './0030-network.js'
import * as m0040 from './0040-images.js'
import * as m0041 from './0041-volumes.js'
import * as m0050 from './0050-idp.js'
import * as m0060 from './0060-onboarding.js'
import * as m0070 from './0070-cluster-jobs.js'
import * as m0075 from './0075-block-device-mappings.js'
import * as m0080 from './0080-server-revisions.js'
import * as m0085 from './0085-idp-flows.js'
import * as m0092 from './0092-network-dataplane.js'
import * as m0094 from './0094-consoles.js'
import * as m0097 from './0097-volume-data.js'
import * as m0098 from './0098-totp-steps.js'
import * as m0099 from './0099-registration-token-host.js'
import * as m0100 from './0100-host-ceph-users.js'
import * as m0101 from './0101-aggregates-migrations.js'
import * as m0102 from './0102-volume-type-access.js'
import * as m0103 from './0103-volume-quota-classes.js'
import * as m0104 from './0104-volume-service-states.js'
import * as m0105 from './0105-volume-messages.js'
import * as m0106 from './0106-snapshot-progress.js'
import * as m0107 from './0107-application-credential-access-rules.js'
import * as m0108 from './0108-domain-configs.js'
import * as m0109 from './0109-identity-policies-consumers.js'
import * as m0110 from './0110-endpoint-filter.js'
import * as m0111 from './0111-image-metadefs.js'
import * as m0112 from './0112-network-agents.js'
import * as m0113 from './0113-subnet-pools.js'
import * as m0114 from './0114-address-scopes.js'
import * as m0115 from './0115-metrics.js'
import * as m0116 from './0116-volume-transfers.js'
import * as m0117 from './0117-volume-qos-specs.js'
import * as m0118 from './0118-volume-groups.js'
import * as m0119 from './0119-volume-type-encryption.js'
import * as m0120 from './0120-volume-backups.js'
import * as m0121 from './0121-oauth1-tokens.js'
import * as m0123 from './0123-volume-attachment-mode.js'
import * as m0124 from './0124-id-sequences.js'
import * as m0125 from './0125-volume-backup-keys.js'
import * as m0126 from './0126-snapshot-exports.js'
import * as m0127 from './0127-volume-default-types.js'
import * as m0128 from './0128-view-revisions.js'
import * as m0129 from './0129-row-revisions.js'
import { ADVISORY_LOCKS } from '../locks.js'

export interface Migration {
  id: string
  name: string
  up(db: Kysely<unknown>): Promise<void>
}

export const MIGRATIONS: Migration[] = [
  { id: '0001', name: 'foundation', up: m0001.up },
  { id: '0010', name: 'identity-auth', up: m0010.up },
  { id: '0020', name: 'compute', up: m0020.up },
  { id: '0030', name: 'network', up: m0030.up },
  { id: '0040', name: 'images', up: m0040.up },
  { id: '0041', name: 'volumes', up: m0041.up },
  { id: '0050', name: 'idp', up: m0050.up },
  { id: '0060', name: 'onboarding', up: m0060.up },
  { id: '0070', name: 'cluster-jobs', up: m0070.up },
  { id: '0075', name: 'block-device-mappings', up: m0075.up },
  { id: '0080', name: 'server-revisions', up: m0080.up },
  { id: '0085', name: 'idp-flows', up: m0085.up },
  { id: '0092', name: 'network-dataplane', up: m0092.up },
  { id: '0094', name: 'consoles', up: m0094.up },
  { id: '0097', name: 'volume-data', up: m0097.up },
  { id: '0098', name: 'totp-steps', up: m0098.up },
  { id: '0099', name: 'registration-token-host', up: m0099.up },
  { id: '0100', name: 'host-ceph-users', up: m0100.up },
  { id: '0101', name: 'aggregates-migrations', up: m0101.up },
  { id: '0102', name: 'volume-type-access', up: m0102.up },
  { id: '0103', name: 'volume-quota-classes', up: m0103.up },
  { id: '0104', name: 'volume-service-states', up: m0104.up },
  { id: '0105', name: 'volume-messages', up: m0105.up },
  { id: '0106', name: 'snapshot-progress', up: m0106.up },
  { id: '0107', name: 'application-credential-access-rules', up: m0107.up },
  { id: '0108', name: 'domain-configs', up: m0108.up },
  { id: '0109', name: 'identity-policies-consumers', up: m0109.up },
  { id: '0110', name: 'endpoint-filter', up: m0110.up },
  { id: '0111', name: 'image-metadefs', up: m0111.up },
  { id: '0112', name: 'network-agents', up: m0112.up },
  { id: '0113', name: 'subnet-pools', up: m0113.up },
  { id: '0114', name: 'address-scopes', up: m0114.up },
  { id: '0115', name: 'metrics', up: m0115.up },
  { id: '0116', name: 'volume-transfers', up: m0116.up },
  { id: '0117', name: 'volume-qos-specs', up: m0117.up },
  { id: '0118', name: 'volume-groups', up: m0118.up },
  { id: '0119', name: 'volume-type-encryption', up: m0119.up },
  { id: '0120', name: 'volume-backups', up: m0120.up },
  { id: '0121', name: 'oauth1-tokens', up: m0121.up },
  { id: '0123', name: 'volume-attachment-mode', up: m0123.up },
  { id: '0124', name: 'id-sequences', up: m0124.up },
  { id: '0125', name: 'volume-backup-keys', up: m0125.up },
  { id: '0126', name: 'snapshot-exports', up: m0126.up },
  { id: '0127', name: 'volume-default-types', up: m0127.up },
  { id: '0128', name: 'view-revisions', up: m0128.up },
  { id: '0129', name: 'row-revisions', up: m0129.up },
]

export interface MigrationReport {
  applied: string[]
  alreadyApplied: number
}

/** Applies every migration not yet applied. Throws if the store has migrations this build does not know. */
export async function migrate(store: Store, migrations: Migration[] = MIGRATIONS): Promise<MigrationReport> {
  return store.db.connection().execute(async (conn) => {
    if (store.capabilities.advisoryLocks) await sql`SELECT pg_advisory_lock(${ADVISORY_LOCKS.migrations})`.execute(conn)
    try {
      await conn.schema
        .createTable('pcc_migrations')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('applied_at', 'bigint', (c) => c.notNull())
        .execute()
      const done = new Set((await conn.selectFrom('pcc_migrations').select('id').execute()).map((r) => r.id))
      const known = new Set(migrations.map((m) => m.id))
      const unknown = [...done].filter((id) => !known.has(id))
      if (unknown.length > 0) {
        throw new Error(`the database has migrations this pcc version does not know (${unknown.join(', ')}): run a newer pcc-server`)
      }
      const applied: string[] = []
      for (const migration of migrations) {
        if (done.has(migration.id)) continue
        await conn.transaction().execute(async (trx) => {
          await migration.up(trx as unknown as Kysely<unknown>)
          await trx.insertInto('pcc_migrations').values({ id: migration.id, name: migration.name, applied_at: Date.now() }).execute()
        })
        applied.push(`${migration.id}-${migration.name}`)
      }
      return { applied, alreadyApplied: done.size }
    } finally {
      if (store.capabilities.advisoryLocks) await sql`SELECT pg_advisory_unlock(${ADVISORY_LOCKS.migrations})`.execute(conn)
    }
  })
}
