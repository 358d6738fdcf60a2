import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileBackend } from '../../../src/host/storage/file/file-backend.js'
import { volumeBackendConformance } from '../../../src/host/storage/conformance/suite.js'

volumeBackendConformance('file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-file-backend-'))
  return { backend: new FileBackend(dir), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})
