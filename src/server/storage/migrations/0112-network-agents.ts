import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * Neutron's agents API (docs/network.md, "Agents"): the agents are derived from hosts' roles, so only what an
 * admin set on one (admin_state_up, description) is stored, a row per agent that has such settings. An L3 or
 * DHCP agent set down changes what its host's data plane holds, so the table raises the data-plane revision as
 * migration 0092's tables do.
 */
const BUMP = 'UPDATE network_dataplane_revision SET rev = rev + 1 WHERE id = 1'

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('network_agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('agent_type', 'text', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('network_agents_host').on('network_agents').columns(['host_id', 'agent_type']).execute()
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    for (const event of ['INSERT', 'UPDATE', 'DELETE']) {
      await sql.raw(`CREATE TRIGGER network_agents_${event.toLowerCase()}_dataplane_rev AFTER ${event} ON network_agents FOR EACH ROW BEGIN ${BUMP}; END`).execute(db)
    }
  } else {
    await sql.raw('CREATE TRIGGER network_agents_dataplane_rev AFTER INSERT OR UPDATE OR DELETE ON network_agents FOR EACH STATEMENT EXECUTE FUNCTION pcc_dataplane_rev()').execute(db)
  }
}
