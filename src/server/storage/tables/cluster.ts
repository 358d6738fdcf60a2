/** Tables of the cluster: one lease row per periodic job, so each job runs once per interval across all processes. */

export interface ClusterJobTable {
  /** The job's name, e.g. `purge`, `reconcile`. */
  name: string
  /** The process running it now; null between runs. */
  lease_owner: string | null
  /** The owner's lease ends here unless it heartbeats; after it, any process may take the job over. */
  lease_expires_at: number | null
  /** Not claimable before this time: the last start plus the interval. */
  next_run_at: number
  last_started_at: number | null
  last_finished_at: number | null
  /** Null when the last run succeeded. */
  last_error: string | null
  /** Completed runs, successful or not (for operators and tests). */
  runs: number
}

export interface ClusterTables {
  cluster_jobs: ClusterJobTable
}
