/** Temporary folders of a test file: each made under the system's temp folder, all removed by `removeAll` (from after()). */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function tempDirs(prefix: string): { make(otherPrefix?: string): string; removeAll(): void } {
  const made: string[] = []
  return {
    make: (otherPrefix?: string) => {
      const dir = mkdtempSync(join(tmpdir(), otherPrefix ?? prefix))
      made.push(dir)
      return dir
    },
    removeAll: () => {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
    },
  }
}
