/**
 * The control plane's own machine as a storage place (all-in-one and the embedded default): the host-side
 * LocalPlace, run inside pcc-server, told by the store which exports to serve and where it reports its address.
 */
import { join } from 'node:path'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import type { VolumeBackend } from '../../host/storage/backend.js'
import { CephBackend } from '../../host/storage/ceph/ceph-backend.js'
import { FileBackend } from '../../host/storage/file/file-backend.js'
import type { CephLink } from '../ceph/connect.js'
import { ExportManager } from '../../host/storage/exports/export-manager.js'
import { LocalPlace, type LocalPlaceOptions } from '../../host/storage/local-place.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { setExportAddress, wantedExports } from '../volume/exports.js'

/**
 * The control plane's place: the file backend in `<data-dir>/volumes` and, with Ceph configured, the ceph backend
 * (volumes in the volumes pool, clones of images in the images pool); its exports run by this process.
 */
export function controllerPlace(options: { dataDir: string; address: string; store: Store; box: SecretBox; images: LocalPlaceOptions['images']; ceph?: CephLink }): LocalPlace {
  const backends = new Map<string, VolumeBackend>([['file', new FileBackend(join(options.dataDir, 'volumes'))]])
  if (options.ceph) backends.set('ceph', new CephBackend(options.ceph.rbd, { volumes: options.ceph.pools.volumes, images: options.ceph.pools.images }))
  return new LocalPlace({
    location: CONTROLLER,
    backends,
    exports: new ExportManager(join(options.dataDir, 'run', 'volumes')),
    address: options.address,
    scratchDir: join(options.dataDir, 'volumes'),
    images: options.images,
    wanted: () => wantedExports(options.store.db, options.box, CONTROLLER, options.address),
    reportAddress: (address) => setExportAddress(options.store.db, CONTROLLER, address, true),
  })
}
