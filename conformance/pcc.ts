/**
 * pcc as a user starts it for Tempest: the real `pcc-server` process on a free port, its own data dir, default
 * settings but the lockout ones (SETTINGS), its log in a file. Two kinds of cloud: the default one (simulated
 * hosts, on 127.0.0.1) and the all-in-one one with real guests (`PCC_LOCAL_HYPERVISOR=qemu`: the machine runs QEMU
 * guests and their data plane, docs/qemu.md), which runs in a network namespace of its own (testkit/netns.ts) so
 * that its bridges, DHCP servers and routers stay off the machine's own network. Then what a cloud operator would
 * have made before running Tempest: a second image (Tempest's image_ref_alt) and an external network for routers
 * and floating IPs.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '../src/testkit/harness.js'
import { createTestNetwork, type TestNetwork } from '../src/testkit/netns.js'
import { RemoteLinuxBackend } from '../src/testkit/network-backend-host.js'
import { cleanEnv, SERVER_MAIN } from '../src/testkit/process.js'
import { guestImage, killQemusUnder, realGuestsMissing } from '../src/testkit/qemu.js'
import { defaultImageName } from '../src/server/image/default-image.js'
import { findBusybox } from '../src/guest-image/build.js'
import { glanceImageRequest, type DistroImageRecipe } from '../src/guest-image/debian.js'

export const ADMIN = { username: 'admin', project: 'admin', domain: 'Default', password: 'tempest-admin-password' }

/**
 * Settings other than the defaults, as devstack sets Keystone's for Tempest: lockout after 2 failed logins for
 * 5 s (Tempest's lockout test waits the lockout out; with the default 30 min it could not). tempest-conf.ts tells
 * Tempest the same values.
 */
export const SETTINGS = { PCC_LOCKOUT_FAILURE_ATTEMPTS: '2', PCC_LOCKOUT_DURATION_SECONDS: '5' }

/** The hosts of the cloud under test: the default simulated ones, or this machine running real QEMU guests. */
export type Hypervisor = 'simulated' | 'qemu'

export interface RunningPcc {
  url: string
  logFile: string
  /**
   * Prefix of the command line that runs Tempest where it reaches the cloud: on the real-guest cloud, inside the
   * outside namespace (the API over the test bridge, the guests' floating IPs over the external segment); empty
   * for the simulated cloud.
   */
  tempestExec: string[]
  stop(): Promise<void>
}

/**
 * The external segment of the real-guest cloud: the interface the all-in-one host's flat network `public` bridges
 * (PCC_LOCAL_PHYSICAL_INTERFACES), a veth whose other end is in the outside namespace, where Tempest runs and holds
 * the segment's gateway address. Floating IPs come from it, and Tempest's SSH client reaches them directly.
 */
export const EXTERNAL = { physicalNetwork: 'public', device: 'ext0', cidr: '172.24.4.0/24', gateway: '172.24.4.1', pool: { start: '172.24.4.10', end: '172.24.4.250' } }

const READY_TIMEOUT_MS = 60_000

export async function startPcc(workDir: string, hypervisor: Hypervisor = 'simulated'): Promise<RunningPcc> {
  const port = await freePort()
  const dataDir = join(workDir, 'pcc-data')
  let net: TestNetwork | undefined
  if (hypervisor === 'qemu') {
    // Two namespaces on the test bridge: the cloud's, and the outside one Tempest runs in.
    net = createTestNetwork(2)
    if (net.sharedBecause) throw new Error(`the real-guest cloud runs in a network namespace of its own: ${net.sharedBecause}`)
    joinExternalSegment(net)
    // dnsmasq drops to nobody and reads its files under the data dir, as under a user's /var/lib/pcc.
    chmodSync(workDir, 0o755)
  }
  const where = net?.hosts[0]
  const address = where?.address ?? '127.0.0.1'
  const url = `http://${address}:${port}`
  const logFile = join(workDir, 'pcc-server.log')
  const log = openSync(logFile, 'a')
  const env = { ...SETTINGS, PCC_LISTEN: `${address}:${port}`, PCC_PUBLIC_URL: url, PCC_DATA_DIR: dataDir, PCC_ADMIN_PASSWORD: ADMIN.password, ...(net && { PCC_LOCAL_HYPERVISOR: 'qemu', PCC_LOCAL_PHYSICAL_INTERFACES: `${EXTERNAL.physicalNetwork}:${EXTERNAL.device}` }) }
  const command = where?.namespace ? ['nsenter', `--net=/run/netns/${where.namespace}`, '--', process.execPath] : [process.execPath]
  const child = spawn(command[0], [...command.slice(1), SERVER_MAIN], { env: cleanEnv(env), stdio: ['ignore', log, log] })
  closeSync(log)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
    if (net) await removeHost(net, join(dataDir, 'host'))
  }
  try {
    await untilReady(url, child)
  } catch (err) {
    await stop()
    throw err
  }
  const outside = net?.hosts[1].namespace
  return { url, logFile, tempestExec: outside ? ['nsenter', `--net=/run/netns/${outside}`, '--', 'env', `PATH=${pingTools(workDir)}:${process.env.PATH ?? ''}`] : [], stop }
}

/**
 * Tempest's scenarios ping the guests' floating IPs with the `ping` command, in a folder Tempest's PATH starts
 * with: Debian's iputils-ping (.ci/run installs it), whose `-M do` test_mtu_sized_frames needs to send frames
 * the network's MTU long without fragmenting them; else busybox's, which the guest image is built from anyway
 * and which refuses `-M` (so that one test fails, saying ping timed out).
 */
function pingTools(workDir: string): string {
  const dir = join(workDir, 'bin')
  mkdirSync(dir, { recursive: true })
  const iputils = ['/usr/bin/ping', '/bin/ping'].find((path) => existsSync(path) && !realpathSync(path).includes('busybox'))
  for (const name of ['ping', 'ping6']) symlinkSync(iputils ?? findBusybox(), join(dir, name))
  return dir
}

/** A veth from the cloud's namespace (EXTERNAL.device, left without address: the flat network bridges it) to the outside one. */
function joinExternalSegment(net: TestNetwork): void {
  const [cloud, outside] = net.hosts.map((h) => h.namespace!)
  execFileSync('ip', ['-n', cloud, 'link', 'add', EXTERNAL.device, 'type', 'veth', 'peer', 'name', 'ext-outside', 'netns', outside])
  execFileSync('ip', ['-n', cloud, 'link', 'set', EXTERNAL.device, 'up'])
  execFileSync('ip', ['-n', outside, 'addr', 'add', `${EXTERNAL.gateway}/${EXTERNAL.cidr.split('/')[1]}`, 'dev', 'ext-outside'])
  execFileSync('ip', ['-n', outside, 'link', 'set', 'ext-outside', 'up'])
}

/**
 * What the all-in-one host leaves when pcc-server stops (guests are daemonized and outlive it, by design): its
 * QEMU processes, then its data plane through the same back end that built it (DHCP servers, routers' namespaces,
 * bridges, rules), then the test network itself.
 */
async function removeHost(net: TestNetwork, root: string): Promise<void> {
  try {
    await killQemusUnder(root)
    const backend = new RemoteLinuxBackend(net.hosts[0].namespace!, root, net.hosts[0].address)
    await backend.teardown().catch(() => {})
    await backend.close()
  } finally {
    net.close()
  }
}

async function untilReady(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`pcc-server exited with ${child.exitCode} before it was ready (see its log)`)
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false)
    if (ready) return
    await sleep(200)
  }
  throw new Error(`pcc-server was not ready within ${READY_TIMEOUT_MS / 1000} s`)
}

/** A small admin client over the public APIs, for the set-up Tempest expects from the operator. */
export class AdminClient {
  private constructor(private readonly url: string, private readonly token: string) {}

  static async login(url: string): Promise<AdminClient> {
    const res = await fetch(`${url}/identity/v3/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { name: ADMIN.username, domain: { name: ADMIN.domain }, password: ADMIN.password } } },
          scope: { project: { name: ADMIN.project, domain: { name: ADMIN.domain } } },
        },
      }),
    })
    if (res.status !== 201) throw new Error(`admin login: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
    return new AdminClient(url, res.headers.get('x-subject-token')!)
  }

  async request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Response> {
    const payload = body === undefined ? undefined : body instanceof Uint8Array ? body : JSON.stringify(body)
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { 'x-auth-token': this.token, ...(payload === undefined ? {} : { 'content-type': contentType }) },
      body: payload,
    })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return res
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body)
    return (await res.json()) as T
  }
}

/** Why this machine cannot run the cloud of these hosts (a missing capability), or undefined. */
export function hypervisorMissing(hypervisor: Hypervisor): string | undefined {
  if (hypervisor === 'simulated') return undefined
  return realGuestsMissing() ?? (process.getuid?.() !== 0 ? 'not root (the real-guest cloud runs in a network namespace of its own)' : undefined)
}

const HYPERVISOR_UP_TIMEOUT_MS = 120_000

/**
 * The all-in-one machine registers itself and gets its roles a few seconds after pcc-server is ready; Tempest's
 * servers need it listed and up first (as an operator checks `openstack hypervisor list` before handing over).
 */
export async function untilHypervisorUp(admin: AdminClient): Promise<void> {
  const deadline = Date.now() + HYPERVISOR_UP_TIMEOUT_MS
  while (Date.now() < deadline) {
    const { hypervisors } = await admin.json<{ hypervisors: { hypervisor_type: string; state: string; status: string }[] }>('GET', '/compute/v2.1/os-hypervisors/detail')
    if (hypervisors.some((h) => h.hypervisor_type === 'QEMU' && h.state === 'up' && h.status === 'enabled')) return
    await sleep(500)
  }
  throw new Error(`this machine was not an enabled QEMU hypervisor within ${HYPERVISOR_UP_TIMEOUT_MS / 1000} s (see pcc-server.log)`)
}

export interface CloudResources {
  imageRef: string
  imageRefAlt: string
  publicNetworkId: string
  publicNetworkName: string
  networkExtensions: string[]
  volumeExtensions: string[]
  /** On the real-guest cloud: the guest image's disk file, which scenarios upload themselves (`[scenario] img_file`). */
  imageFile?: string
  /** With a distribution image: its Glance properties, which scenarios uploading img_file give their image too. */
  imageProperties?: Record<string, string>
  /** On the real-guest cloud: image_ref's login user (its `os_admin_user` property). */
  sshUser?: string
  /** On the real-guest cloud: image_ref_alt's login user (the default image's). */
  altSshUser?: string
  /** Tempest's flavor_ref and flavor_ref_alt: pcc's default flavors, or ones big enough for a distribution image. */
  flavorRef: string
  flavorRefAlt: string
  /** Which guest image_ref boots: the pcc guest image, or a distribution's cloud image (slower to boot: tempest-conf.ts). */
  guest: GuestKind
}

export type GuestKind = 'test-image' | 'distro-image'

/**
 * A distribution's cloud image (`pcctl image build`) as Tempest's image_ref on the real-guest cloud, in place of the
 * default image: the file, and the recipe it was built from (its Glance properties and login user).
 */
export interface DistroGuest {
  recipe: DistroImageRecipe
  file: string
}

/**
 * The flavors a distribution image boots with: Debian's cloud kernel, systemd and cloud-init want about 1 GiB of
 * RAM, and its root grows into a 4 GB disk (the long lane's flavor, docs/qemu.md). The alternative flavor differs
 * in its disk only, for the scenarios that resize.
 */
const DISTRO_FLAVORS = [
  { name: 'distro', vcpus: 1, ram: 1024, disk: 4 },
  { name: 'distro-alt', vcpus: 1, ram: 1024, disk: 5 },
]

/**
 * What the operator of a new cloud makes before pointing Tempest at it; with a distribution image (real-guest
 * cloud only), that image uploaded as image_ref and flavors it fits in.
 */
export async function prepareCloud(admin: AdminClient, hypervisor: Hypervisor = 'simulated', distro?: DistroGuest): Promise<CloudResources> {
  if (distro && hypervisor !== 'qemu') throw new Error('a distribution image needs the real-guest cloud')
  const { images } = await admin.json<{ images: { id: string; name: string; os_admin_user?: string }[] }>('GET', '/image/v2/images')
  const image = images.find((i) => i.name === defaultImageName())
  if (!image) throw new Error('the default image is missing')
  // A second active image with the same bytes (Tempest rebuilds and compares with image_ref_alt).
  const bytes = new Uint8Array(await (await admin.request('GET', `/image/v2/images/${image.id}/file`)).arrayBuffer())
  const alt = await admin.json<{ id: string }>('POST', '/image/v2/images', { name: `${defaultImageName()}-alt`, disk_format: 'qcow2', container_format: 'bare', visibility: 'public' })
  await admin.request('PUT', `/image/v2/images/${alt.id}/file`, bytes, 'application/octet-stream')

  const publicNetworkName = 'public'
  // On the real-guest cloud the external network is the flat segment Tempest is on (EXTERNAL), so that its
  // floating IPs are reached from there; the simulated cloud's carries no traffic.
  const provider = hypervisor === 'qemu' ? { 'provider:network_type': 'flat', 'provider:physical_network': EXTERNAL.physicalNetwork } : {}
  const { network } = await admin.json<{ network: { id: string } }>('POST', '/network/v2.0/networks', { network: { name: publicNetworkName, 'router:external': true, ...provider } })
  const segment = hypervisor === 'qemu' ? { gateway_ip: EXTERNAL.gateway, enable_dhcp: false, allocation_pools: [EXTERNAL.pool] } : {}
  await admin.json('POST', '/network/v2.0/subnets', { subnet: { network_id: network.id, ip_version: 4, cidr: EXTERNAL.cidr, name: 'public-subnet', ...segment } })

  // Tempest's extension flags: what the services list, nothing more.
  const aliases = async (path: string) => (await admin.json<{ extensions: { alias: string }[] }>('GET', path)).extensions.map((e) => e.alias)
  const common = {
    imageRefAlt: alt.id,
    publicNetworkId: network.id,
    publicNetworkName,
    networkExtensions: await aliases('/network/v2.0/extensions'),
    volumeExtensions: await aliases('/volume/v3/extensions'),
  }
  if (distro) {
    const [flavorRef, flavorRefAlt] = await Promise.all(DISTRO_FLAVORS.map((f) => createFlavor(admin, f)))
    // image_ref_alt stays the default image (rebuilds to it log in as its own user, image_alt_ssh_user).
    return { ...common, imageRef: await uploadDistroImage(admin, distro), imageFile: distro.file, imageProperties: distro.recipe.properties, sshUser: distro.recipe.adminUser, altSshUser: image.os_admin_user, flavorRef, flavorRefAlt, guest: 'distro-image' }
  }
  return {
    ...common,
    imageRef: image.id,
    flavorRef: '1',
    flavorRefAlt: '2',
    guest: 'test-image',
    ...(hypervisor === 'qemu' && { imageFile: (await guestImage()).disk.path, sshUser: image.os_admin_user, altSshUser: image.os_admin_user }),
  }
}

/** The distribution image, public (Tempest's projects boot it), with its recipe's properties; its id once active. */
async function uploadDistroImage(admin: AdminClient, distro: DistroGuest): Promise<string> {
  const { id } = await admin.json<{ id: string }>('POST', '/image/v2/images', glanceImageRequest(distro.recipe, distro.recipe.name, 'public'))
  await admin.request('PUT', `/image/v2/images/${id}/file`, readFileSync(distro.file), 'application/octet-stream')
  const { status } = await admin.json<{ status: string }>('GET', `/image/v2/images/${id}`)
  if (status !== 'active') throw new Error(`the image uploaded from ${distro.file} is ${status}, not active`)
  return id
}

async function createFlavor(admin: AdminClient, flavor: (typeof DISTRO_FLAVORS)[number]): Promise<string> {
  return (await admin.json<{ flavor: { id: string } }>('POST', '/compute/v2.1/flavors', { flavor })).flavor.id
}
