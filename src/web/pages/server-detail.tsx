/**
 * One server: overview (facts, addresses, volumes, interfaces), metrics charts, console log, serial and VNC
 * consoles, action log, and for admins its migrations.
 */
import { useState } from 'preact/hooks'
import { get, post } from '../api/http'
import { listPorts, serverBusy, type Server } from '../api/resources'
import { isAdmin } from '../api/session'
import { href, navigate } from '../router'
import { ActionButton, ErrorNotice, Loading, Status, Table, Tabs, formatTime } from '../ui/components'
import { useAsync, usePoll } from '../ui/hooks'
import { terminalText } from '../ui/terminal-text'
import { chartRange } from '../ui/line-chart'
import { ServerCharts } from './metrics-charts'
import { ServerActions, detachInterface, detachVolume, disassociateFloatingIp } from './server-actions'
import { SerialConsole, consoleUrl } from './serial-console'
import { MigrationsTab } from './server-migrations'

const POWER = ['NOSTATE', 'RUNNING', '', 'PAUSED', 'SHUTDOWN', '', 'CRASHED', 'SUSPENDED']
const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'metrics', label: 'Metrics' },
  { id: 'log', label: 'Log' },
  { id: 'console', label: 'Console' },
  { id: 'actions', label: 'Action log' },
  { id: 'migrations', label: 'Migrations', admin: true },
]

function Overview({ server, reload }: { server: Server; reload: () => void }) {
  const image = useAsync(async (signal) => (server.image ? (await get<{ name: string }>('image', `/images/${server.image.id}`, signal).catch(() => undefined))?.name : undefined), [server.image && server.image.id])
  const ports = useAsync(async (signal) => (await listPorts(signal)).filter((p) => p.device_id === server.id), [server.id, server.updated])
  const addresses = Object.entries(server.addresses ?? {}).flatMap(([network, list]) => list.map((a) => ({ network, ...a })))
  const facts: [string, unknown][] = [
    ['ID', server.id],
    ['Status', <Status value={server.status} />],
    ['Task', server['OS-EXT-STS:task_state'] ?? 'none'],
    ['Power state', POWER[server['OS-EXT-STS:power_state']] ?? server['OS-EXT-STS:power_state']],
    ['Flavor', `${server.flavor.original_name ?? ''} (${server.flavor.vcpus} vCPU, ${server.flavor.ram} MiB RAM, ${server.flavor.disk} GiB disk)`],
    ['Image', server.image ? (image.data ?? server.image.id) : 'booted from volume'],
    ['Key pair', server.key_name ?? 'none'],
    ['Security groups', [...new Set((server.security_groups ?? []).map((g) => g.name))].join(', ') || 'none'],
    ['Availability zone', server['OS-EXT-AZ:availability_zone'] ?? ''],
    ...(isAdmin() ? ([['Host', server['OS-EXT-SRV-ATTR:host'] ?? 'not placed']] as [string, unknown][]) : []),
    ['Locked', server.locked ? `yes${server.locked_reason ? ` (${server.locked_reason})` : ''}` : 'no'],
    ['Created', formatTime(server.created)],
    ['Updated', formatTime(server.updated)],
    ['Description', server.description ?? ''],
  ]
  return (
    <>
      {server.fault && <ErrorNotice title={`Fault ${server.fault.code}`} error={new Error(server.fault.message)} />}
      <EvacuationNotice server={server} />
      <dl class="facts">
        {facts.map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd>{v as string}</dd>
          </>
        ))}
      </dl>
      <h2>Addresses</h2>
      <Table
        rows={addresses}
        rowKey={(a) => `${a.network}:${a.addr}`}
        empty="No addresses (yet)."
        columns={[
          { label: 'Network', value: (a) => a.network },
          { label: 'Address', value: (a) => a.addr },
          { label: 'Type', value: (a) => a['OS-EXT-IPS:type'] },
          { label: 'MAC', value: (a) => a['OS-EXT-IPS-MAC:mac_addr'] ?? '' },
        ]}
        actions={(a) => (a['OS-EXT-IPS:type'] === 'floating' ? <ActionButton label="Disassociate" run={() => disassociateFloatingIp(a.addr)} onDone={reload} /> : null)}
      />
      <h2>Interfaces</h2>
      <Table
        rows={ports.data ?? []}
        rowKey={(p) => p.id}
        empty={ports.loading ? 'Loading…' : 'No interfaces.'}
        columns={[
          { label: 'Port', value: (p) => p.id },
          { label: 'Fixed IPs', value: (p) => p.fixed_ips.map((f) => f.ip_address).join(', ') },
          { label: 'Status', value: (p) => <Status value={p.status} /> },
        ]}
        actions={(p) => <ActionButton label="Detach" confirm="Detach this interface from the server?" run={() => detachInterface(server, p.id)} onDone={reload} />}
      />
      <h2>Volumes</h2>
      <Table
        rows={server['os-extended-volumes:volumes_attached'] ?? []}
        rowKey={(v) => v.id}
        empty="No volumes attached."
        columns={[{ label: 'Volume', value: (v) => <a href={href('/volumes', { id: v.id })}>{v.id}</a> }]}
        actions={(v) => <ActionButton label="Detach" confirm="Detach this volume from the server?" run={() => detachVolume(server, v.id)} onDone={reload} />}
      />
    </>
  )
}

function ConsoleLog({ server }: { server: Server }) {
  const [lines, setLines] = useState(200)
  const log = useAsync(async () => (await post<{ output: string }>('compute', `/servers/${server.id}/action`, { 'os-getConsoleOutput': { length: lines } })).output, [server.id, lines])
  const text = log.data === undefined ? undefined : terminalText(log.data)
  usePoll(async () => log.reload(), 5000)
  return (
    <>
      <div class="toolbar">
        <label>
          Lines{' '}
          <select value={String(lines)} onChange={(e) => setLines(Number(e.currentTarget.value))}>
            {[50, 200, 1000, -1].map((n) => (
              <option value={String(n)}>{n < 0 ? 'all' : n}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={log.reload}>
          Refresh
        </button>
      </div>
      <ErrorNotice error={log.error} title="No console log" />
      <pre class="log" aria-label="Console log" tabIndex={0}>
        {text ?? (log.loading ? 'Loading…' : '')}
      </pre>
    </>
  )
}

function Consoles({ server }: { server: Server }) {
  const [vncError, setVncError] = useState<unknown>()
  return (
    <>
      <div class="toolbar">
        <ActionButton
          label="Open VNC console in a new tab"
          run={async () => {
            setVncError(undefined)
            const tab = window.open('', '_blank')
            try {
              const url = await consoleUrl(server.id, 'vnc')
              if (tab) tab.location.href = url
              else location.href = url
            } catch (err) {
              tab?.close()
              setVncError(err)
            }
          }}
        />
      </div>
      <ErrorNotice error={vncError} title="No VNC console" />
      <h2>Serial console</h2>
      <SerialConsole serverId={server.id} />
    </>
  )
}

interface InstanceAction {
  action: string
  request_id: string
  start_time: string
  message: string | null
  user_id: string
}

/** The server's actions, newest first (as Nova lists them). */
function useActions(server: Server) {
  return useAsync(async (signal) => (await get<{ instanceActions: InstanceAction[] }>('compute', `/servers/${server.id}/os-instance-actions`, signal)).instanceActions, [server.id, server.updated])
}

/**
 * Says so when the server's last action moved it off a failed host: its owner did not ask for it, and an
 * evacuated guest has rebooted (only what was on its disks survived).
 */
function EvacuationNotice({ server }: { server: Server }) {
  const last = useActions(server).data?.[0]
  if (last?.action !== 'evacuate') return null
  if (last.message) {
    return (
      <div class="notice error" role="status">
        <strong>The host this server ran on failed</strong>, and restarting it on another host {formatTime(last.start_time)} did not
        work. The action log has the reason; an administrator can evacuate it again once a host has room.
      </div>
    )
  }
  return (
    <div class="notice" role="status">
      <strong>
        {server.status === 'REBUILD' ? 'Being restarted' : 'Restarted'} on another host {formatTime(last.start_time)}
      </strong>{' '}
      because the host it ran on failed. Its
      disks were kept; the guest booted again, so what it held only in memory is gone. The action log has the details.
    </div>
  )
}

function ActionLog({ server }: { server: Server }) {
  const actions = useActions(server)
  return (
    <>
      <ErrorNotice error={actions.error} />
      <Table
        rows={actions.data ?? []}
        rowKey={(a) => a.request_id + a.action}
        empty={actions.loading ? 'Loading…' : 'No actions recorded.'}
        columns={[
          { label: 'Action', value: (a) => a.action },
          { label: 'Started', value: (a) => formatTime(a.start_time) },
          { label: 'Result', value: (a) => a.message ?? 'ok' },
          { label: 'Request id', value: (a) => a.request_id },
          { label: 'User', value: (a) => a.user_id },
        ]}
      />
    </>
  )
}

export function ServerDetailPage({ params, query }: { params: { id: string }; query: URLSearchParams }) {
  const tabs = TABS.filter((t) => !t.admin || isAdmin())
  const tab = tabs.find((t) => t.id === query.get('tab'))?.id ?? 'overview'
  // The id comes from the address, which anyone can write into a link: encoded, it stays one path segment.
  const server = useAsync(async (signal) => (await get<{ server: Server }>('compute', `/servers/${encodeURIComponent(params.id)}`, signal)).server, [params.id])
  usePoll(async () => server.reload(), server.data ? (serverBusy(server.data) ? 2000 : 10000) : undefined)
  if (!server.data) return server.error ? <ErrorNotice error={server.error} title="Could not load the server" /> : <Loading what="the server" />
  const s = server.data
  return (
    <section>
      <p>
        <a href={href('/servers')}>← Servers</a>
      </p>
      <div class="page-head detail">
        <h1>{s.name}</h1>
        <Status value={s.status} />
        {s['OS-EXT-STS:task_state'] && <span class="muted">{s['OS-EXT-STS:task_state']}…</span>}
      </div>
      <ServerActions server={s} onChanged={server.reload} />
      <Tabs tabs={tabs} current={tab} onSelect={(id) => navigate(`/servers/${s.id}`, { tab: id })} />
      <div role="tabpanel" aria-label={tabs.find((t) => t.id === tab)?.label}>
        {tab === 'overview' && <Overview server={s} reload={server.reload} />}
        {tab === 'metrics' && (
          <ServerCharts serverId={s.id} vcpus={s.flavor.vcpus} memoryBytes={s.flavor.ram === undefined ? undefined : s.flavor.ram * 1024 * 1024} range={chartRange(query.get('range'))} onRange={(range) => navigate(`/servers/${s.id}`, { tab: 'metrics', range })} />
        )}
        {tab === 'log' && <ConsoleLog server={s} />}
        {tab === 'console' && <Consoles server={s} />}
        {tab === 'actions' && <ActionLog server={s} />}
        {tab === 'migrations' && <MigrationsTab server={s} />}
      </div>
    </section>
  )
}
