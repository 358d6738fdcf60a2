/**
 * Servers: a page of the project's servers, filtered and paged by the compute API (limit + marker), kept live
 * without reloading by asking only for what changed since the last look (`changes-since`, which also reports
 * deleted servers). The interval is short while a server on the page is busy and longer when all are settled.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { call, query } from '../api/http'
import { serverAddresses, serverBusy, type Server } from '../api/resources'
import { href } from '../router'
import { ErrorNotice, Loading, Status, Table, formatTime } from '../ui/components'
import { useAsync, usePoll } from '../ui/hooks'
import { CreateServerDialog } from './server-create'

export const PAGE_SIZE = 20
const BUSY_POLL_MS = 2000
const IDLE_POLL_MS = 5000
/** A change-set this large may hide more: load the page again instead. */
const CHANGES_LIMIT = 500

const STATUS_FILTERS = ['', 'ACTIVE', 'BUILD', 'SHUTOFF', 'PAUSED', 'SUSPENDED', 'SHELVED_OFFLOADED', 'ERROR']

/** The server's clock at the time of an answer, less a margin: the next `changes-since` (client clocks differ). */
function serverTime(headers: Headers): string {
  const date = Date.parse(headers.get('date') ?? '')
  return new Date((isNaN(date) ? Date.now() : date) - 2000).toISOString()
}

/** Nova's name filter is a regular expression; the search box means plain text. */
function nameFilter(text: string): string | undefined {
  return text.trim() ? text.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : undefined
}

interface PageState {
  rows: Server[]
  hasNext: boolean
  since: string
}

export function ServersPage() {
  const [typed, setTyped] = useState('')
  const [search, setSearch] = useState('')
  // Ask the API once typing pauses, not per key.
  useEffect(() => {
    const timer = setTimeout(() => {
      setMarkers([])
      setSearch(typed)
    }, 300)
    return () => clearTimeout(timer)
  }, [typed])
  const [status, setStatus] = useState('')
  const [markers, setMarkers] = useState<string[]>([])
  const [creating, setCreating] = useState(false)
  const marker = markers[markers.length - 1]
  const page = useAsync(async (signal): Promise<PageState> => {
    const q = query({ limit: PAGE_SIZE + 1, marker, name: nameFilter(search), status: status || undefined })
    const response = await call<{ servers: Server[] }>('compute', `/servers/detail${q}`, { signal })
    const servers = response.body.servers
    return { rows: servers.slice(0, PAGE_SIZE), hasNext: servers.length > PAGE_SIZE, since: serverTime(response.headers) }
  }, [search, status, marker])
  const state = useRef<PageState | undefined>(undefined)
  state.current = page.data

  const firstUnfiltered = !marker && !search && !status
  usePoll(
    async () => {
      const current = state.current
      if (!current) return
      const response = await call<{ servers: Server[] }>('compute', `/servers/detail${query({ 'changes-since': current.since, limit: CHANGES_LIMIT })}`)
      const changed = response.body.servers
      if (changed.length >= CHANGES_LIMIT) return page.reload()
      const byId = new Map(changed.map((s) => [s.id, s]))
      let rows = current.rows.filter((r) => byId.get(r.id)?.status !== 'DELETED').map((r) => byId.get(r.id) ?? r)
      if (firstUnfiltered) {
        const known = new Set(rows.map((r) => r.id))
        const added = changed.filter((s) => !known.has(s.id) && s.status !== 'DELETED' && (!rows[0] || s.created >= rows[0].created))
        rows = [...added.sort((a, b) => b.created.localeCompare(a.created)), ...rows].slice(0, PAGE_SIZE)
      }
      page.setData({ rows, hasNext: current.hasNext, since: serverTime(response.headers) })
    },
    page.data ? (page.data.rows.some(serverBusy) ? BUSY_POLL_MS : IDLE_POLL_MS) : undefined,
  )

  return (
    <section>
      <div class="page-head">
        <h1>Servers</h1>
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          Create server
        </button>
      </div>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Name contains{' '}
          <input
            type="search"
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value)}
          />
        </label>
        <label>
          Status{' '}
          <select
            value={status}
            onChange={(e) => {
              setMarkers([])
              setStatus(e.currentTarget.value)
            }}
          >
            {STATUS_FILTERS.map((s) => (
              <option value={s}>{s || 'Any'}</option>
            ))}
          </select>
        </label>
      </form>
      <ErrorNotice error={page.error} title="Could not load the servers" />
      {!page.data && page.loading && <Loading what="servers" />}
      {page.data && (
        <>
          <Table
            caption="Servers of this project"
            rows={page.data.rows}
            rowKey={(s) => s.id}
            empty={search || status ? 'No server matches the filter.' : 'No servers yet. Create one with "Create server".'}
            columns={[
              { label: 'Name', value: (s) => <a href={href(`/servers/${s.id}`)}>{s.name || s.id}</a> },
              { label: 'Status', value: (s) => <Status value={s.status} />, class: 'status-col' },
              { label: 'Task', value: (s) => s['OS-EXT-STS:task_state'] ?? '' },
              { label: 'Addresses', value: serverAddresses },
              { label: 'Flavor', value: (s) => s.flavor?.original_name ?? s.flavor?.id ?? '' },
              { label: 'Key pair', value: (s) => s.key_name ?? '' },
              { label: 'Created', value: (s) => formatTime(s.created) },
            ]}
          />
          <div class="pager">
            <button type="button" disabled={markers.length === 0} onClick={() => setMarkers(markers.slice(0, -1))}>
              ← Previous
            </button>
            <span>Page {markers.length + 1}</span>
            <button type="button" disabled={!page.data.hasNext} onClick={() => setMarkers([...markers, page.data!.rows[page.data!.rows.length - 1].id])}>
              Next →
            </button>
          </div>
        </>
      )}
      {creating && (
        <CreateServerDialog
          onClose={() => setCreating(false)}
          onCreated={() => {
            setMarkers([])
            page.reload()
          }}
        />
      )}
    </section>
  )
}
