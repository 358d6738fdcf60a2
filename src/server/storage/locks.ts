/**
 * The PostgreSQL advisory lock keys pcc processes share, in one table so that no two uses take the same key by
 * accident. Each is an arbitrary constant; the two-part ones add a hash of what they serialise on (a project, a
 * chunk's digest) as the second key. SQLite has no such locks and needs none: one process owns its database.
 */
export const ADVISORY_LOCKS = {
  /** Session lock: migrations run once, by whichever process takes it first. */
  migrations: 7_243_001,
  /** The bootstrap's rows (domain, admin, roles, catalog) are made by one replica; the others find them. */
  bootstrap: 7_243_002,
  /** The default image is made by one replica; the others find it. */
  defaultImage: 7_243_003,
  /** Servers' display ids (the number in their default name) are handed out one at a time. */
  displayId: 7_243_020,
  /** With hashtext(project id): a project's volume quota is checked and used up by one transaction at a time. */
  volumeQuota: 7_243_041,
  /** With hashtext(digest): one backup chunk is stored or released at a time. */
  backupChunk: 7_243_042,
} as const
