/**
 * The storage place conformance suite on LocalPlace, built as the control plane builds its own place
 * (src/server/all-in-one/controller-place.ts): the file backend in a data dir, exports run by this process. Image
 * bytes come from a small image store over files that keeps the image service's rules (only a queued image takes
 * bytes, once); the exports wanted are the test's.
 */
import { randomUUID } from 'node:crypto'
import { copyFile, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises'
import { createReadStream, createWriteStream, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { storagePlaceConformance } from '../../src/host/storage/conformance/place-suite.js'
import { FileBackend } from '../../src/host/storage/file/file-backend.js'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { LocalPlace } from '../../src/host/storage/local-place.js'
import { VolumeBackendError, type VolumeRef } from '../../src/contracts/host/volume.js'
import { CONTROLLER, type PlaceImages, type WantedExport } from '../../src/contracts/host/storage-place.js'

/** Images as files `<dir>/<id>`; a queued image is a `<id>.queued` marker until its bytes arrive. */
class FileImages implements PlaceImages {
  constructor(readonly dir: string) {}

  async add(path: string): Promise<string> {
    const id = randomUUID()
    await copyFile(path, join(this.dir, id))
    return id
  }

  async queue(): Promise<string> {
    const id = randomUUID()
    await writeFile(join(this.dir, `${id}.queued`), '')
    return id
  }

  async openBytes(imageId: string): Promise<{ stream: Readable; size: number }> {
    const path = join(this.dir, imageId)
    return { size: (await stat(path)).size, stream: createReadStream(path) }
  }

  async getById(imageId: string): Promise<{ status: string } | undefined> {
    if (existsSync(join(this.dir, `${imageId}.queued`))) return { status: 'queued' }
    return existsSync(join(this.dir, imageId)) ? { status: 'active' } : undefined
  }

  /** As the image service: bytes go only to a queued image (an active one refuses them). */
  async completeSnapshotImage(imageId: string, data: Readable): Promise<unknown> {
    if (!existsSync(join(this.dir, `${imageId}.queued`))) throw new Error(`image ${imageId} is not queued`)
    await pipeline(data, createWriteStream(join(this.dir, `${imageId}.part`)))
    await rename(join(this.dir, `${imageId}.part`), join(this.dir, imageId))
    await rm(join(this.dir, `${imageId}.queued`))
    return undefined
  }
}

storagePlaceConformance('LocalPlace (the controller)', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'pcc-place-local-'))
  const backend = new FileBackend(join(dataDir, 'volumes'))
  await backend.check()
  const images = new FileImages(await mkdtemp(join(dataDir, 'images-')))
  let wanted: WantedExport[] = []
  // A restarted pcc-server builds its place again, with a new export manager over the same run directory.
  const build = () =>
    new LocalPlace({
      location: CONTROLLER,
      backends: new Map([['file', backend]]),
      exports: new ExportManager(join(dataDir, 'run', 'volumes')),
      address: '127.0.0.1',
      scratchDir: join(dataDir, 'volumes'),
      images,
      wanted: async () => wanted,
      reportAddress: async () => {},
    })
  return {
    place: build(),
    restart: async () => build(),
    node: (ref: VolumeRef) => backend.blockdev(ref),
    images: {
      add: (path) => images.add(path),
      queueUpload: () => images.queue(),
      saveTo: (imageId, path) => copyFile(join(images.dir, imageId), path),
    },
    record: {
      creatingFromImage: async () => {},
      exports: async (w) => {
        wanted = w
      },
    },
    exportAddress: '127.0.0.1',
    isBackendFailure: (err) => err instanceof VolumeBackendError,
    cleanup: async () => {
      await new ExportManager(join(dataDir, 'run', 'volumes')).stopAll()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
})
