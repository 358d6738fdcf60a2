/** The services the bootstrap puts in the catalog, with the path of each under the public URL. */
export interface CatalogService {
  type: string
  name: string
  description: string
  path: string
}

export const CATALOG_SERVICES: CatalogService[] = [
  { type: 'identity', name: 'keystone', description: 'Identity v3', path: '/identity/v3' },
  { type: 'compute', name: 'nova', description: 'Compute v2.1', path: '/compute/v2.1' },
  { type: 'network', name: 'neutron', description: 'Network v2.0', path: '/network' },
  { type: 'volumev3', name: 'cinderv3', description: 'Block storage v3', path: '/volume/v3' },
  { type: 'block-storage', name: 'cinder', description: 'Block storage v3', path: '/volume/v3' },
  { type: 'image', name: 'glance', description: 'Image v2', path: '/image' },
  { type: 'resmgr', name: 'resmgr', description: 'Resource manager (hosts, roles, IdP clients)', path: '/resmgr' },
]

export const ENDPOINT_INTERFACES = ['public', 'internal', 'admin'] as const
export const DEFAULT_REGION = 'RegionOne'
