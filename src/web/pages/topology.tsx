/**
 * Network topology: each network a horizontal band (external ones first), routers and servers as boxes joined
 * by lines to the bands they have ports on. Drawn as SVG from the network API's networks, routers and ports.
 */
import { get } from '../api/http'
import { listNetworks, listPorts, listRouters, listSubnets, type Network } from '../api/resources'
import { href } from '../router'
import { ErrorNotice, Loading } from '../ui/components'
import { useAsync } from '../ui/hooks'

interface Node {
  id: string
  kind: 'router' | 'server'
  label: string
  networks: number[]
  link?: string
}

export interface Layout {
  width: number
  height: number
  bands: { network: Network; y: number; label: string }[]
  nodes: (Node & { x: number; y: number })[]
}

const BAND_GAP = 120
const BAND_H = 26
const BOX_W = 120
const BOX_H = 34
const LEFT = 20

/** Places bands top to bottom and each node between the first and last band it touches, left to right. */
export function layout(networks: (Network & { cidrs: string[] })[], nodes: Node[]): Layout {
  const bands = networks.map((network, i) => ({ network, y: 30 + i * BAND_GAP, label: `${network.name || network.id} ${network.cidrs.join(' ')}`.trim() }))
  let x = LEFT + 190
  const placed = nodes
    .filter((n) => n.networks.length)
    .sort((a, b) => Math.min(...a.networks) - Math.min(...b.networks) || (a.kind === b.kind ? a.label.localeCompare(b.label) : a.kind === 'router' ? -1 : 1))
    .map((n) => {
      const top = Math.min(...n.networks)
      const y = n.networks.length > 1 ? (bands[top].y + bands[Math.max(...n.networks)].y) / 2 : bands[top].y + (top === bands.length - 1 && top > 0 ? -BAND_GAP / 2 : BAND_GAP / 2)
      const node = { ...n, x, y: y - BOX_H / 2 + BAND_H / 2 }
      x += BOX_W + 24
      return node
    })
  return { width: Math.max(x + 20, 640), height: Math.max(30 + bands.length * BAND_GAP, 200), bands, nodes: placed }
}

export function TopologyPage() {
  const data = useAsync(async (signal) => {
    const [networks, subnets, routers, ports, servers] = await Promise.all([listNetworks(signal), listSubnets(signal), listRouters(signal), listPorts(signal), get<{ servers: { id: string; name: string }[] }>('compute', '/servers?limit=1000', signal)])
    const ordered = [...networks].sort((a, b) => Number(b['router:external']) - Number(a['router:external']) || a.name.localeCompare(b.name))
    const index = new Map(ordered.map((n, i) => [n.id, i]))
    const withCidrs = ordered.map((n) => ({ ...n, cidrs: subnets.filter((s) => s.network_id === n.id).map((s) => s.cidr) }))
    const touching = (deviceId: string) => [...new Set(ports.filter((p) => p.device_id === deviceId).map((p) => index.get(p.network_id)).filter((i): i is number => i !== undefined))]
    const nodes: Node[] = [
      ...routers.map((r) => ({ id: r.id, kind: 'router' as const, label: r.name || r.id.slice(0, 8), networks: [...new Set([...touching(r.id), ...(r.external_gateway_info && index.has(r.external_gateway_info.network_id) ? [index.get(r.external_gateway_info.network_id)!] : [])])], link: href('/routers') })),
      ...servers.servers.map((s) => ({ id: s.id, kind: 'server' as const, label: s.name, networks: touching(s.id), link: href(`/servers/${s.id}`) })),
    ]
    return layout(withCidrs, nodes)
  }, [])
  return (
    <section>
      <h1>Network topology</h1>
      <ErrorNotice error={data.error} title="Could not load the topology" />
      {!data.data && !data.error && <Loading />}
      {data.data && data.data.bands.length === 0 && <p>No networks yet.</p>}
      {data.data && data.data.bands.length > 0 && <Drawing layout={data.data} />}
    </section>
  )
}

function Drawing({ layout: l }: { layout: Layout }) {
  const summary = `${l.bands.length} networks, ${l.nodes.filter((n) => n.kind === 'router').length} routers, ${l.nodes.filter((n) => n.kind === 'server').length} servers`
  return (
    <div class="topology">
      <svg width={l.width} height={l.height} role="img" aria-label={`Network topology: ${summary}`}>
        {l.nodes.flatMap((n) => n.networks.map((i) => <line x1={n.x + BOX_W / 2} x2={n.x + BOX_W / 2} y1={n.y + BOX_H / 2} y2={l.bands[i].y + BAND_H / 2} />))}
        {l.bands.map((b) => (
          <g class={b.network['router:external'] ? 'ext' : 'net'}>
            <rect x={LEFT} y={b.y} width={l.width - LEFT * 2} height={BAND_H} rx={4} />
            <text x={LEFT + 8} y={b.y + 17}>
              {b.label}
              {b.network['router:external'] ? ' (external)' : ''}
            </text>
          </g>
        ))}
        {l.nodes.map((n) => (
          <a href={n.link}>
            <g class={n.kind}>
              <rect x={n.x} y={n.y} width={BOX_W} height={BOX_H} rx={n.kind === 'router' ? 17 : 4} />
              <text x={n.x + BOX_W / 2} y={n.y + 21} text-anchor="middle">
                {n.kind === 'router' ? '⇄ ' : ''}
                {n.label.length > 15 ? `${n.label.slice(0, 14)}…` : n.label}
              </text>
            </g>
          </a>
        ))}
      </svg>
      <p class="muted">{summary}. Select a server or router to open it.</p>
    </div>
  )
}
