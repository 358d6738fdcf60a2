/**
 * A remote console through a real agent process (simulated driver): the agent dials its websocket out to the
 * control plane for each session, the user types a command into the serial console and reads the answer; the
 * driver's refusal reaches the user as the close reason; a user who leaves closes the agent's side, an agent that
 * dies closes the user's; no session, socket or row is left behind.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { killAgent, onboardAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { closedWithin, openConsoleClient } from '../../src/testkit/console-client.js'

describe('remote consoles of an agent host', () => {
  let server: TestServer
  let api: ComputeClient
  let host: ScratchHost
  let agent: ChildProcess
  let serverId: string

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '10', PCC_RECONCILE_SECONDS: '0' } })
    const admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, admin)
    ;({ host, agent } = await onboardAgent(api, 'agent-con', server.url))
    serverId = (await api.create({ name: 'typed', imageRef: await api.bootImage(), flavorRef: '1', networks: 'none' })).id
    await until('the server ACTIVE', 30_000, async () => ((await api.server(serverId))?.status === 'ACTIVE' ? true : undefined))
  })
  after(async () => {
    if (agent) await killAgent(agent)
    await server?.close()
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  const serialUrl = async () => {
    const r = await api.call('POST', `/servers/${serverId}/remote-consoles`, { remote_console: { protocol: 'serial', type: 'serial' } })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return r.body.remote_console.url as string
  }
  const agentLog = () => readFileSync(join(host.root, 'var/log/pcc/agent.log'), 'utf8')

  it('carries a serial session from the agent: a typed command is answered', async () => {
    const client = await openConsoleClient(await serialUrl(), { protocols: ['binary'] })
    await client.until(new RegExp(`cloud-init: instance ${serverId}[\\s\\S]*typed login: $`))
    client.send('ops\r')
    await client.until(/ops@typed:~\$ $/)
    client.send('uname -a\r')
    await client.until(/uname -a\r\nLinux typed 6\.1\.0-pcc [^\r]*\r\nops@typed:~\$ $/)
    assert.equal(server.deps.consoles.sessions.openSockets, 2, "the user's websocket and the agent's")
    await client.close()
    await until('the agent closed its side', 10_000, async () => (/"msg":"console session closed"/.test(agentLog()) ? true : undefined))
    await until('the server let go of both websockets', 10_000, async () => (server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
    const rows = await server.deps.store.db.selectFrom('console_sessions').select('id').execute()
    assert.deepEqual(rows, [], 'no session row left')
    const commands = await server.deps.store.db.selectFrom('host_commands').select(['op', 'status', 'args']).where('op', '=', 'openConsole').execute()
    assert.deepEqual(commands.map((c) => c.status), ['done'])
  })

  it("closes the agent's side when the user vanishes without a close", async () => {
    const closedBefore = (agentLog().match(/"msg":"console session closed"/g) ?? []).length
    const client = await openConsoleClient(await serialUrl())
    await client.until(/typed login: $/)
    client.ws.terminate()
    await until("the agent closed its side", 10_000, async () => ((agentLog().match(/"msg":"console session closed"/g) ?? []).length > closedBefore ? true : undefined))
    await until('the server let go of both websockets', 10_000, async () => (server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })

  it("closes the user's websocket with the host's reason when the agent's driver refuses", async () => {
    // Simulated hosts have no display; the API says so (501), and so does the agent if asked anyway.
    assert.equal((await api.call('POST', `/servers/${serverId}/remote-consoles`, { remote_console: { protocol: 'vnc', type: 'novnc' } })).status, 501)
    const { token } = await server.deps.consoles.tokens.issue({ serverId, hostId: host.hostId, protocol: 'vnc', consoleType: 'novnc' })
    const client = await openConsoleClient(`${server.url}/console/websocket?token=${token}`)
    const end = await closedWithin(client, 20_000)
    assert.equal(end.code, 1011)
    assert.match(end.reason, /^VNC is not available on simulated hosts\./)
    await until('nothing held', 5000, async () => (server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })

  it("closes the user's websocket when the agent dies mid-session", async () => {
    const client = await openConsoleClient(await serialUrl())
    await client.until(/typed login: $/)
    await killAgent(agent)
    const end = await closedWithin(client, 20_000)
    assert.ok([1000, 1011].includes(end.code), JSON.stringify(end))
    await until('nothing held', 5000, async () => (server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })
})
