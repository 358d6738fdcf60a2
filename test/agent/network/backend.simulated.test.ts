import { SimulatedNetworkBackend } from '../../../src/host/network/simulated-backend.js'
import { networkBackendConformance } from '../../../src/host/network/conformance/suite.js'

networkBackendConformance('simulated', async () => ({ backend: new SimulatedNetworkBackend(), tunnelIp: '10.255.0.1', close: async () => {} }))
