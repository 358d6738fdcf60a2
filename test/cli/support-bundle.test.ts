import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { extract } from 'tar-stream'
import { decrypt, readMessage, readPrivateKey } from 'openpgp'
import { cliSandbox } from '../../src/testkit/cli.js'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'

async function untar(archive: Buffer): Promise<Map<string, string>> {
  const files = new Map<string, string>()
  const reader = extract()
  reader.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = []
    stream.on('data', (c) => chunks.push(c as Buffer))
    stream.on('end', () => {
      files.set(header.name, Buffer.concat(chunks).toString('utf8'))
      next()
    })
  })
  const done = new Promise<void>((resolve) => reader.on('finish', () => resolve()))
  reader.end(gunzipSync(archive))
  await done
  return files
}

describe('pcctl generate-support-bundle', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
  })
  after(async () => server.close())

  it('writes an archive only the support private key opens, with the host files and no secrets', async () => {
    const root = mkdtempSync(join(tmpdir(), 'pcc-host-'))
    mkdirSync(join(root, 'etc/pcc'), { recursive: true })
    mkdirSync(join(root, 'var/log/pcc'), { recursive: true })
    writeFileSync(join(root, 'etc/hostname'), 'node-7\n')
    writeFileSync(join(root, 'etc/pcc/agent.json'), JSON.stringify({ controller: server.url, host_credential: 'hc-secret-123', password: 'pw-secret-456' }))
    writeFileSync(join(root, 'etc/pcc/agent.conf'), 'controller = x\nregistration_token = rt-secret-789\n')
    writeFileSync(join(root, 'var/log/pcc/agent.log'), 'agent started\nheartbeat ok\n')
    const outDir = mkdtempSync(join(tmpdir(), 'pcc-bundle-'))
    const sandbox = cliSandbox()
    const env = { PCCTL_HOST_ROOT: root, OS_AUTH_URL: `${server.url}/identity/v3`, OS_USERNAME: 'admin', OS_PASSWORD: ADMIN_PASSWORD }

    const result = await sandbox.run(['generate-support-bundle', '--log-dir', outDir], env)
    assert.equal(result.code, 0, result.stderr)
    const path = result.stdout.trim()
    assert.match(path, new RegExp(`^${outDir}/node-7-\\d{8}-\\d{6}\\.tgz\\.gpg$`))
    assert.deepEqual(readdirSync(outDir), [path.slice(outDir.length + 1)])

    // The admin fetches the private key and opens the bundle.
    const { token } = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })
    const privateKeyResponse = await fetch(`${server.url}/resmgr/v1/support/private-key`, { headers: { 'x-auth-token': token } })
    assert.equal(privateKeyResponse.status, 200)
    const privateKey = await readPrivateKey({ armoredKey: await privateKeyResponse.text() })
    const message = await readMessage({ binaryMessage: readFileSync(path) })
    const { data } = await decrypt({ message, decryptionKeys: privateKey, format: 'binary' })
    const files = await untar(Buffer.from(data as Uint8Array))
    for (const dir of [root, outDir]) rmSync(dir, { recursive: true, force: true })

    assert.ok(files.has('facts.json'))
    assert.equal(JSON.parse(files.get('facts.json')!).hostname, 'node-7')
    assert.match(files.get('logs/pcc/agent.log')!, /heartbeat ok/)
    assert.ok(files.has('config/pcc/agent.json') && files.has('config/pcc/agent.conf'))
    const everything = [...files.values()].join('\n')
    for (const secret of ['hc-secret-123', 'pw-secret-456', 'rt-secret-789', ADMIN_PASSWORD]) assert.ok(!everything.includes(secret), `${secret} is redacted`)
  })

  it('keeps the private key from anyone without a token', async () => {
    assert.equal((await fetch(`${server.url}/resmgr/v1/support/private-key`)).status, 401)
    assert.equal((await fetch(`${server.url}/resmgr/v1/support/public-key`)).status, 200)
  })
})
