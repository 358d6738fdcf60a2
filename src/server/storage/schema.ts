/**
 * Row types of every table, as Kysely sees them. Conventions that hold for every table:
 * - ids are text (UUIDs in canonical form unless a table says otherwise);
 * - times are integers, milliseconds since the epoch, UTC (`*_at` columns);
 * - booleans are integers 0/1, so both dialects store and compare them alike;
 * - structured values (options, extra, payload) are JSON text, parsed by the repository that owns the table.
 *
 * Each service keeps its tables in tables/<service>.ts; the Database type is their union.
 */
import type { FoundationTables } from './tables/foundation.js'
import type { IdentityTables } from './tables/identity.js'
import type { ComputeTables } from './tables/compute.js'
import type { NetworkTables } from './tables/network.js'
import type { ImageTables } from './tables/image.js'
import type { VolumeTables } from './tables/volume.js'
import type { VolumeGroupTables } from './tables/volume-groups.js'
import type { IdpTables } from './tables/idp.js'
import type { IdentityAuthTables } from './tables/identity-auth.js'
import type { OnboardingTables } from './tables/onboarding.js'
import type { ClusterTables } from './tables/cluster.js'
import type { ComputeVolumeTables } from './tables/compute-volumes.js'
import type { ConsoleTables } from './tables/console.js'
import type { MetricsTables } from './tables/metrics.js'

export type * from './tables/foundation.js'
export type * from './tables/identity.js'
export type * from './tables/compute.js'
export type * from './tables/network.js'
export type * from './tables/image.js'
export type * from './tables/volume.js'
export type * from './tables/idp.js'
export type * from './tables/identity-auth.js'
export type * from './tables/onboarding.js'
export type * from './tables/cluster.js'
export type * from './tables/compute-volumes.js'
export type * from './tables/console.js'
export type * from './tables/metrics.js'

export interface Database
  extends FoundationTables,
    IdentityTables,
    ComputeTables,
    NetworkTables,
    ImageTables,
    VolumeTables,
    VolumeGroupTables,
    IdpTables,
    IdentityAuthTables,
    OnboardingTables,
    ClusterTables,
    ComputeVolumeTables,
    ConsoleTables,
    MetricsTables {}
