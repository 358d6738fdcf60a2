/**
 * Everything the HTTP layer and the services share, built once by the composition root (runtime.ts) and
 * passed down explicitly. No module-level singletons.
 */
import type { Logger } from 'pino'
import type { Config } from './config/settings.js'
import type { Conductor } from './conductor/conductor.js'
import type { SecretBox } from './crypto/secret-box.js'
import type { AuthFlow } from './identity/auth-flow.js'
import type { TokenService } from './identity/token-service.js'
import type { IdpServices } from './oidc/services.js'
import type { HostDataService } from './onboarding/host-data.js'
import type { OnboardingService } from './onboarding/onboarding-service.js'
import type { BlobStore } from './blobs/blob-store.js'
import type { HostCephUsers } from './ceph/host-users.js'
import type { ImageService } from './image/service.js'
import type { VolumeServices } from './volume/services.js'
import type { Consoles } from './remote-consoles/consoles.js'
import type { NetworkService } from './network/service.js'
import type { DataplaneService } from './network/dataplane/service.js'
import type { Store } from './storage/store.js'
import type { TaskQueue } from './tasks/queue.js'
import type { TaskRunner } from './tasks/runner.js'

export interface AppDeps {
  config: Config
  logger: Logger
  store: Store
  box: SecretBox
  queue: TaskQueue
  runner: TaskRunner
  tokens: TokenService
  /** The OIDC provider: client secrets, signing keys, refresh tokens, the token endpoint. */
  idp: IdpServices
  /** Host onboarding: registration, host credentials, agent heartbeats and commands. */
  onboarding: OnboardingService
  /** Server lifecycle: scheduler, hypervisor drivers, reconciliation. */
  conductor: Conductor
  /** Networks, ports and addresses (the network API and the compute service use it). */
  network: NetworkService
  /** What each host's guest networking must be, for the agents (long poll on the data-plane revision). */
  dataplane: DataplaneService
  /** Keystone authentication (methods, MFA, scopes); its login checks (verifyLogin, verifyPasscode, mfaSatisfied…) serve the IdP too. */
  identityAuth: AuthFlow
  /** The URL prefix of each service, built from the public URL. */
  urls: ServiceUrls
  /** Image bytes (data-dir/blobs). */
  blobs: BlobStore
  /** Hosts' own cephx users, when Ceph is configured (docs/ceph.md). */
  hostCeph: HostCephUsers | undefined
  /** Glance-compatible image service; compute calls getVisibleImage / createSnapshotImage. */
  images: ImageService
  /** Cinder-compatible block storage; compute calls volumes.reserveForAttach / attach / detach / createForBoot. */
  volumeServices: VolumeServices
  /** The bytes hosts move through the control plane: image downloads, snapshot uploads, cold-migration disks. */
  hostData: HostDataService
  /** Remote consoles: console auth tokens, and the sessions that carry hosts' console streams. */
  consoles: Consoles
}

export interface ServiceUrls {
  base: string
  identity: string
  compute: string
  network: string
  volume: string
  image: string
  resmgr: string
  idp: string
}

export function serviceUrls(publicUrl: string): ServiceUrls {
  return {
    base: publicUrl,
    identity: `${publicUrl}/identity/v3`,
    compute: `${publicUrl}/compute/v2.1`,
    network: `${publicUrl}/network`,
    volume: `${publicUrl}/volume/v3`,
    image: `${publicUrl}/image`,
    resmgr: `${publicUrl}/resmgr`,
    idp: `${publicUrl}/idp`,
  }
}
