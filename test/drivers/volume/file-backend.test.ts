import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileBackend } from '../../../src/server/drivers/volume/file/file-backend.js'
import { volumeBackendConformance } from './conformance.js'

volumeBackendConformance('file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-file-backend-'))
  return { backend: new FileBackend(dir), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})
