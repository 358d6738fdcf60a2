/**
 * A real Ceph cluster for tests, from Debian's packages (ceph-mon, ceph-mgr, ceph-osd, ceph-common), started
 * entirely in user space under one folder: one monitor, one manager and one OSD whose BlueStore is a sparse file —
 * no systemd, cephadm, LVM or kernel module (docs/ceph.md, "Tests"). `npm test` starts one cluster for the whole
 * run (scripts/run-tests.mjs) and passes it in PCC_TEST_CEPH_CONF / PCC_TEST_CEPH_KEYRING; a test file run on its
 * own starts a private one. Each test makes pools of its own (`freshPools`), so tests never see each other's images.
 */
import { spawn, execFile, spawnSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const exec = promisify(execFile)

/** How a test reaches a cluster: its ceph.conf and the admin's keyring. */
export interface CephCluster {
  conf: string
  keyring: string
  /** The cephx user of the keyring (`admin`). */
  user: string
}

export interface StartedCeph extends CephCluster {
  dir: string
  /** Kills the daemons and removes the folder. */
  stop(): void
}

/** Why a Ceph cluster cannot run here (Debian's package names), or undefined when it can. */
export function cephMissing(): string | undefined {
  const missing = ['ceph-mon', 'ceph-mgr', 'ceph-osd', 'rbd'].filter((p) => spawnSync('sh', ['-c', `command -v ${p}`]).status !== 0)
  return missing.length ? `${missing.join(', ')} not installed (Debian: apt-get install ceph-mon ceph-mgr ceph-osd ceph-common)` : undefined
}

/**
 * The ceph-mgr modules that are always on (leaving one out is a health error) plus iostat: the manager imports
 * every module it finds, 1–5 s each on a busy 2-core machine, so it gets only these.
 */
const MGR_MODULES = ['mgr_module.py', 'mgr_util.py', 'balancer', 'crash', 'devicehealth', 'orchestrator', 'pg_autoscaler', 'progress', 'rbd_support', 'status', 'telemetry', 'volumes', 'iostat']

function cephConf(dir: string, fsid: string, monPort: number, bindPorts: [number, number], osdBytes: number): string {
  const mon = `[v2:127.0.0.1:${monPort},v1:127.0.0.1:${monPort + 1}]`
  return `[global]
fsid = ${fsid}
mon host = ${mon}
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind port min = ${bindPorts[0]}
ms bind port max = ${bindPorts[1]}
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
keyring = ${dir}/keyring
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
pid file = ${dir}/run/$name.pid
log file = ${dir}/log/$name.log
crash dir = ${dir}/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon max pg per osd = 2000
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd crush chooseleaf type = 0
osd pool default pg autoscale mode = off
mgr initial modules = iostat
mgr module path = ${dir}/mgr-modules
[mon]
mon data = ${dir}/$name
keyring = ${dir}/$name/keyring
mon cluster log file = ${dir}/log/cluster.log
[mgr]
mgr data = ${dir}/$name
keyring = ${dir}/$name/keyring
[osd]
osd data = ${dir}/$name
keyring = ${dir}/$name/keyring
osd objectstore = bluestore
bluestore block create = true
bluestore block size = ${osdBytes}
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mkfs = false
osd memory target = 1073741824
`
}

async function ceph(conf: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return (await exec('ceph', ['-c', conf, '--connect-timeout', '10', ...args], { timeout: timeoutMs, maxBuffer: 16 << 20 })).stdout
}

async function until(what: string, deadline: number, check: () => Promise<boolean>): Promise<void> {
  for (;;) {
    const done = await check().catch((err: unknown) => {
      if (err instanceof MonitorDied) throw err
      return false
    })
    if (done) return
    if (Date.now() > deadline) throw new Error(`ceph test cluster: timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 500))
  }
}

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A monitor that exited before it answered (its port taken, most often): another start on other ports may work. */
class MonitorDied extends Error {}

/**
 * Starts a cluster in a new folder (or `dir`) and resolves once its OSD is up and in, its manager active and its
 * health OK (about 30 s). Daemons run in sessions of their own, so a test runner's process group ending does not
 * take them down before `stop`. A monitor that dies at once is started again on other ports: the ports are drawn
 * at random, and one may be taken by the time the monitor binds it.
 */
export async function startCeph(options: { dir?: string; osdGb?: number; timeoutMs?: number } = {}): Promise<StartedCeph> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startCephOnce(options)
    } catch (err) {
      if (!(err instanceof MonitorDied) || attempt === 3) throw err
    }
  }
}

async function startCephOnce(options: { dir?: string; osdGb?: number; timeoutMs?: number }): Promise<StartedCeph> {
  const dir = options.dir ?? join(tmpdir(), `pcc-ceph-${randomBytes(4).toString('hex')}`)
  const deadline = Date.now() + (options.timeoutMs ?? 240_000)
  for (const sub of ['run', 'log', 'crash', 'mon.a', 'mgr.x', 'mgr-modules']) mkdirSync(join(dir, sub), { recursive: true })
  for (const m of MGR_MODULES) symlinkSync(`/usr/share/ceph/mgr/${m}`, join(dir, 'mgr-modules', m))
  // Own ports, so several clusters (a private one beside the run's) can live on one machine: below Linux's
  // ephemeral range (32768-60999), where the machine's outgoing connections take theirs, and below the test run's
  // PostgreSQL (25432-26431).
  const base = 12000 + 200 * Math.floor(Math.random() * 65)
  const conf = join(dir, 'ceph.conf')
  const keyring = join(dir, 'keyring')
  writeFileSync(conf, cephConf(dir, randomUUID(), base, [base + 10, base + 199], (options.osdGb ?? 16) * 1024 ** 3))
  const pids: number[] = []
  const daemon = (program: string, args: string[], log: string): void => {
    const out = openSync(join(dir, 'log', log), 'a')
    const child = spawn(program, ['-c', conf, '-f', ...args], { detached: true, stdio: ['ignore', out, out] })
    closeSync(out)
    child.unref()
    if (child.pid) pids.push(child.pid)
    writeFileSync(join(dir, 'pids'), pids.join('\n'))
  }
  const stop = (): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        /* already gone */
      }
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await exec('ceph-authtool', ['--create-keyring', keyring, '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *'])
    await exec('ceph-authtool', [keyring, '--gen-key', '-n', 'client.admin', '--cap', 'mon', 'allow *', '--cap', 'osd', 'allow *', '--cap', 'mds', 'allow *', '--cap', 'mgr', 'allow *'])
    const fsid = /fsid = (\S+)/.exec(readFileSync(conf, 'utf8'))![1]
    await exec('monmaptool', ['--create', '--clobber', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${base},v1:127.0.0.1:${base + 1}]`, join(dir, 'monmap')])
    await exec('ceph-mon', ['-c', conf, '--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap'), '--keyring', keyring])
    daemon('ceph-mon', ['-i', 'a'], 'mon.a.out')
    const mon = pids[0]
    await until('the monitor', deadline, async () => {
      if (!alive(mon)) throw new MonitorDied(`ceph-mon exited: ${readFileSync(join(dir, 'log', 'mon.a.out'), 'utf8').slice(-500)}`)
      return (await ceph(conf, ['mon', 'stat'], 15_000), true)
    })
    await ceph(conf, ['auth', 'get-or-create', 'mgr.x', 'mon', 'allow profile mgr', 'osd', 'allow *', 'mds', 'allow *', '-o', join(dir, 'mgr.x', 'keyring')])
    daemon('ceph-mgr', ['-i', 'x'], 'mgr.x.out')
    const uuid = randomUUID()
    const key = (await exec('ceph-authtool', ['--gen-print-key'])).stdout.trim()
    writeFileSync(join(dir, 'new-osd.json'), JSON.stringify({ cephx_secret: key }))
    const id = (await ceph(conf, ['osd', 'new', uuid, '-i', join(dir, 'new-osd.json')])).trim()
    rmSync(join(dir, 'new-osd.json'))
    mkdirSync(join(dir, `osd.${id}`))
    writeFileSync(join(dir, `osd.${id}`, 'keyring'), `[osd.${id}]\n\tkey = ${key}\n`)
    await exec('ceph-osd', ['-c', conf, '-i', id, '--mkfs', '--key', key, '--osd-uuid', uuid], { timeout: 120_000 })
    daemon('ceph-osd', ['-i', id], `osd.${id}.out`)
    // HEALTH_OK can show before any OSD is up: wait for the OSD, then the manager, then health.
    await until('the OSD to be up and in', deadline, async () => {
      const stat = JSON.parse(await ceph(conf, ['osd', 'stat', '-f', 'json'])) as { num_up_osds: number; num_in_osds: number }
      return stat.num_up_osds === 1 && stat.num_in_osds === 1
    })
    await until('the manager', deadline, async () => (JSON.parse(await ceph(conf, ['mgr', 'stat', '-f', 'json'])) as { available: boolean }).available)
    await until('HEALTH_OK', deadline, async () => (await ceph(conf, ['health'])).startsWith('HEALTH_OK'))
  } catch (err) {
    stop()
    throw err
  }
  return { dir, conf, keyring, user: 'admin', stop }
}

let privateCluster: Promise<CephCluster> | undefined

/**
 * The cluster tests use: the run's (PCC_TEST_CEPH_CONF), or a private one started once per test process and
 * stopped when it exits. A string names what the machine lacks (tests then skip, saying so).
 */
export async function testCeph(): Promise<CephCluster | string> {
  if (process.env.PCC_TEST_CEPH_CONF && process.env.PCC_TEST_CEPH_KEYRING) return { conf: process.env.PCC_TEST_CEPH_CONF, keyring: process.env.PCC_TEST_CEPH_KEYRING, user: 'admin' }
  const missing = cephMissing()
  if (missing) return missing
  privateCluster ??= startCeph().then((cluster) => {
    process.once('exit', () => cluster.stop())
    return cluster
  })
  return privateCluster
}

/** Creates pools for RBD with names of their own (`<prefix>-<random>-<name>`), in the order given. */
export async function freshPools(cluster: CephCluster, names: string[]): Promise<{ pools: string[]; remove(): Promise<void> }> {
  const tag = randomBytes(3).toString('hex')
  const pools = names.map((n) => `t${tag}-${n}`)
  const auth = ['--id', cluster.user, '--keyring', cluster.keyring]
  for (const pool of pools) {
    await ceph(cluster.conf, [...auth, 'osd', 'pool', 'create', pool])
    await exec('rbd', ['-c', cluster.conf, ...auth, 'pool', 'init', pool], { timeout: 60_000 })
  }
  return {
    pools,
    async remove() {
      for (const pool of pools) await ceph(cluster.conf, [...auth, 'osd', 'pool', 'delete', pool, pool, '--yes-i-really-really-mean-it']).catch(() => {})
    },
  }
}

/** The three pools pcc uses, made fresh, and the PCC_CEPH_* settings of a pcc-server that uses them as `user`. */
export async function freshPccPools(cluster: CephCluster): Promise<{ images: string; volumes: string; vms: string; env: Record<string, string>; remove(): Promise<void> }> {
  const { pools, remove } = await freshPools(cluster, ['images', 'volumes', 'vms'])
  const [images, volumes, vms] = pools
  const env = {
    PCC_CEPH_CONF: cluster.conf,
    PCC_CEPH_USER: cluster.user,
    PCC_CEPH_KEYRING: cluster.keyring,
    PCC_CEPH_IMAGES_POOL: images,
    PCC_CEPH_VOLUMES_POOL: volumes,
    PCC_CEPH_VMS_POOL: vms,
  }
  return { images, volumes, vms, env, remove }
}
