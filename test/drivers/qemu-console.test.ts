/**
 * The console conformance suite (console-conformance.ts) over the QEMU driver: one real guest (the pcc guest image
 * under TCG) whose serial port and display are QEMU's unix sockets. Its busybox shell answers on the serial port,
 * its display speaks RFB, and powering it off ends an open session.
 */
import { after, describe } from 'node:test'
import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { QemuDriver } from '../../src/host/compute/qemu/qemu-driver.js'
import { metadataFiles } from '../../src/server/metadata/documents.js'
import { facts, fileImage, guestImage, qemuLeftovers, realGuestsMissing, waitForText } from '../../src/testkit/qemu.js'
import { consoleConformance, type ConsoleTestbed } from '../../src/host/compute/conformance/console-suite.js'

const BOOT_MS = 120_000

describe('QEMU driver consoles (conformance)', { skip: realGuestsMissing() }, () => {
  let root: string | undefined
  let driver: QemuDriver | undefined
  const serverId = '00000000-0000-4000-8000-00000000c0de'
  let booted: Promise<ConsoleTestbed> | undefined

  /** One guest for the whole suite, booted on first use (a TCG boot is the expensive part). */
  const setup = () =>
    (booted ??= (async () => {
      const image = await guestImage()
      root = mkdtempSync(join(tmpdir(), 'pcc-qemu-console-'))
      driver = new QemuDriver({
        hostname: 'qemu-console', root, vcpus: 2, memoryMb: 2048, diskGb: 10, accel: 'tcg', shutdownTimeoutMs: 30_000,
        images: { open: async () => createReadStream(image.disk.path) },
      })
      await driver.start()
      await driver.spawn({
        serverId, instanceName: 'instance-0000c0de', imageId: 'guest-image', hostname: 'console', userData: null,
        image: fileImage('guest-image', image.disk.path, 'qcow2'),
        flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
        configDrive: Object.fromEntries(Object.entries(metadataFiles(facts(serverId, '#!/bin/sh\ntrue\n'))).map(([k, v]) => [k, v.toString('base64')])),
      })
      let log = ''
      const poll = setInterval(() => void driver!.consoleOutput(serverId).then((t) => (log = t), () => {}), 500)
      try {
        await waitForText(() => log, /pcc-guest: ready/, BOOT_MS, 'the guest ready')
      } finally {
        clearInterval(poll)
      }
      return { driver, serverId, answerMs: 60_000 }
    })())

  after(async () => {
    if (driver) await driver.destroy(serverId).catch(() => {})
    if (root) {
      const left = qemuLeftovers(root, serverId)
      rmSync(root, { recursive: true, force: true })
      if (left.length) throw new Error(`left behind: ${left.join(', ')}`)
    }
  })

  consoleConformance(setup)
})
