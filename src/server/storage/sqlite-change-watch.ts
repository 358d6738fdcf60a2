/**
 * Whether an SQLite database in WAL mode has changed since last asked, without a read transaction. Every read
 * transaction takes and drops file locks (about 6 µs of system calls on a 2-core VM, more under load, against
 * ~1 µs for the lookup itself), so a read polled all day pays more for asking than for its answer.
 *
 * Every commit, by any connection of any process, rewrites the WAL-index header at the start of the `-shm` file
 * (SQLite's file format, "WAL-index format": a 48-byte header whose change counter each transaction raises, read by
 * every connection to find the newest snapshot). Reading those bytes is one `pread`; while they are what they were,
 * nothing was committed. A read that meets them half-written sees a change and asks the database, as does any
 * failure to read them: the watch errs only towards asking.
 */
import { closeSync, openSync, readSync } from 'node:fs'

/** The first copy of the WAL-index header (SQLite writes it last, after the second). */
const HEADER_BYTES = 48

export class SqliteChangeWatch {
  private fd: number | undefined
  private last = Buffer.alloc(HEADER_BYTES)
  private next = Buffer.alloc(HEADER_BYTES)
  private current = 0

  constructor(private readonly shmFile: string) {}

  /**
   * A number that stays the same while the database has had no commit. Read before a statement whose answer is
   * kept: the answer then holds for as long as the generation it was read under.
   */
  generation(): number {
    if (!this.readHeader()) return ++this.current
    if (!this.next.equals(this.last)) {
      ;[this.last, this.next] = [this.next, this.last]
      this.current++
    }
    return this.current
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private readHeader(): boolean {
    try {
      // Opened on first use: the -shm file exists once a connection has the database open in WAL mode.
      this.fd ??= openSync(this.shmFile, 'r')
      return readSync(this.fd, this.next, 0, HEADER_BYTES, 0) === HEADER_BYTES
    } catch {
      return false
    }
  }
}
