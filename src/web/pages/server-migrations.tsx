/**
 * A server's Migrations tab (admins only: both APIs are admin-only in Nova's policy): its live migration in
 * progress (`GET /servers/{id}/migrations`) and every move it made (`GET /os-migrations?instance_uuid=`: cold
 * migrations, resizes, live migrations, evacuations), newest first. A running live migration can be forced to
 * complete (the guest pauses on its source so the copy converges) or aborted (it stays on its source); a queued
 * one aborted (docs/console.md, "Server page").
 */
import { del, get, post, query } from '../api/http'
import { serverBusy, type Server } from '../api/resources'
import { ActionButton, ErrorNotice, Status, Table, formatTime } from '../ui/components'
import { useAsync, usePoll } from '../ui/hooks'

interface Migration {
  id: number
  status: string
  source_compute: string | null
  dest_compute: string | null
  migration_type?: string
  created_at: string
  updated_at: string | null
  user_id?: string
}

interface LiveMigration extends Migration {
  memory_total_bytes: number | null
  memory_remaining_bytes: number | null
  disk_total_bytes: number | null
  disk_remaining_bytes: number | null
}

/** How much is copied, when the host reports it (pcc's hosts report no figures while copying). */
function progress(m: LiveMigration): string {
  const part = (total: number | null, remaining: number | null, what: string) => (total ? `${what} ${Math.round((100 * (total - (remaining ?? 0))) / total)} %` : undefined)
  return [part(m.memory_total_bytes, m.memory_remaining_bytes, 'memory'), part(m.disk_total_bytes, m.disk_remaining_bytes, 'disk')].filter(Boolean).join(', ') || 'not reported'
}

/** What the compute API lets an admin do with a live migration in each status (Nova's: force-complete only running). */
const CONTROLS: Record<string, { forceComplete: boolean; abort: boolean }> = {
  queued: { forceComplete: false, abort: true },
  preparing: { forceComplete: false, abort: true },
  running: { forceComplete: true, abort: true },
}

const route = (m: Migration) => `${m.source_compute ?? '?'} → ${m.dest_compute ?? 'chosen by the scheduler'}`

export function MigrationsTab({ server }: { server: Server }) {
  const running = useAsync(async (signal) => (await get<{ migrations: LiveMigration[] }>('compute', `/servers/${server.id}/migrations`, signal)).migrations, [server.id])
  const history = useAsync(
    async (signal) => (await get<{ migrations: Migration[] }>('compute', `/os-migrations${query({ instance_uuid: server.id })}`, signal)).migrations.sort((a, b) => b.id - a.id),
    [server.id],
  )
  // Quickly while a move runs, so its start and end show within seconds.
  const moving = Boolean(running.data?.length) || serverBusy(server)
  usePoll(() => {
    running.reload()
    history.reload()
  }, moving ? 2000 : 10000)
  return (
    <>
      <h2>Live migration in progress</h2>
      <ErrorNotice error={running.error} title="Could not load the live migration in progress" />
      <Table
        rows={running.data ?? []}
        rowKey={(m) => String(m.id)}
        empty={running.loading && !running.data ? 'Loading…' : 'None: the server is not being live migrated.'}
        columns={[
          { label: 'Id', value: (m) => m.id },
          { label: 'Status', value: (m) => <Status value={m.status} /> },
          { label: 'From → to', value: route },
          { label: 'Started', value: (m) => formatTime(m.created_at) },
          { label: 'Copied', value: progress },
        ]}
        actions={(m) => {
          const can = CONTROLS[m.status]
          const path = `/servers/${server.id}/migrations/${m.id}`
          const reload = () => {
            running.reload()
            history.reload()
          }
          return can ? (
            <>
              {can.forceComplete && <ActionButton label="Force complete" confirm="Pause the server on its source so that the live migration completes?" run={() => post('compute', `${path}/action`, { force_complete: null })} onDone={reload} />}
              {can.abort && <ActionButton label="Abort" danger confirm="Abort this live migration? The server stays on its source host." run={() => del('compute', path)} onDone={reload} />}
            </>
          ) : null
        }}
      />
      <h2>Migration history</h2>
      <ErrorNotice error={history.error} title="Could not load the migration history" />
      <Table
        rows={history.data ?? []}
        rowKey={(m) => String(m.id)}
        empty={history.loading && !history.data ? 'Loading…' : 'This server was never moved.'}
        columns={[
          { label: 'Id', value: (m) => m.id },
          { label: 'Type', value: (m) => m.migration_type ?? '' },
          { label: 'Status', value: (m) => <Status value={m.status} /> },
          { label: 'From → to', value: route },
          { label: 'Started', value: (m) => formatTime(m.created_at) },
          { label: 'Last change', value: (m) => formatTime(m.updated_at) },
          { label: 'User', value: (m) => m.user_id ?? '' },
        ]}
      />
    </>
  )
}
