import { SimulatedNetworkBackend } from '../../../src/agent/network/simulated-backend.js'
import { networkBackendConformance } from './backend-conformance.js'

networkBackendConformance('simulated', async () => ({ backend: new SimulatedNetworkBackend(), tunnelIp: '10.255.0.1', close: async () => {} }))
