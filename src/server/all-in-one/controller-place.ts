/**
 * The control plane's own machine as a storage place (all-in-one and the embedded default): the host-side
 * LocalPlace, run inside pcc-server, told by the store which exports to serve and where it reports its address.
 */
import { join } from 'node:path'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import { FileBackend } from '../../host/storage/file/file-backend.js'
import { ExportManager } from '../../host/storage/exports/export-manager.js'
import { LocalPlace, type LocalPlaceOptions } from '../../host/storage/local-place.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { setExportAddress, wantedExports } from '../volume/exports.js'

/** The control plane's place: the file backend in `<data-dir>/volumes`, its exports run by this process. */
export function controllerPlace(options: { dataDir: string; address: string; store: Store; box: SecretBox; images: LocalPlaceOptions['images'] }): LocalPlace {
  return new LocalPlace({
    location: CONTROLLER,
    backends: new Map([['file', new FileBackend(join(options.dataDir, 'volumes'))]]),
    exports: new ExportManager(join(options.dataDir, 'run', 'volumes')),
    address: options.address,
    scratchDir: join(options.dataDir, 'volumes'),
    images: options.images,
    wanted: () => wantedExports(options.store.db, options.box, CONTROLLER, options.address),
    reportAddress: (address) => setExportAddress(options.store.db, CONTROLLER, address, true),
  })
}
