/**
 * Admin → Hosts: the resource manager's hosts with facts, roles and state, and the network agents they run;
 * onboarding with a registration token.
 */
import { useState } from 'preact/hooks'
import { call, del, get, post, put } from '../../api/http'
import { session } from '../../api/session'
import { href } from '../../router'
import { accountUrl, shellWord } from '../api-access'
import { ActionButton, CopyBlock, Form, Status, formatTime } from '../../ui/components'
import { FormAction, ResourceList } from '../../ui/resource-list'
import { NetworkAgentsTable } from './network-agents'

export interface HostView {
  id: string
  info: { hostname: string; os_info: string; arch: string; responding: boolean; last_response_time: string | null; cpu_info?: { count: number; model: string; virtualization: boolean } }
  roles: string[]
  role_status: string
  roles_status_details: Record<string, string>
  hypervisor_info?: { vcpus: number; memory_mb: number; disk_gb: number; running_vms: number; cpu_allocation_ratio?: number; ram_allocation_ratio?: number; disk_allocation_ratio?: number }
  extensions?: { ip_address?: { data: string[] } }
  agent_version?: string
  message?: string
}

function hostRoles(h: HostView): string {
  return h.roles.map((r) => `${r} (${h.roles_status_details[r] ?? '?'})`).join(', ') || 'none'
}

export function HostsTable({ heading = 'h1' as 'h1' | 'h2' }) {
  return (
    <ResourceList<HostView>
      title="Hosts"
      refreshMs={5000}
      heading={heading}
      load={(signal) => get<HostView[]>('resmgr', '/hosts', signal)}
      rowKey={(h) => h.id}
      empty="No hosts. Onboard one: Admin → Onboarding."
      columns={[
        { label: 'Host', value: (h) => <><strong><a href={href(`/admin/hosts/${h.id}`)}>{h.info.hostname}</a></strong><br /><small class="muted">{h.id}</small></> },
        { label: 'State', value: (h) => <Status value={h.info.responding ? 'UP' : 'DOWN'} /> },
        { label: 'Roles', value: (h) => <>{hostRoles(h)}{h.message && <div class="muted">{h.message}</div>}</> },
        { label: 'Facts', value: (h) => <>{h.info.os_info} {h.info.arch}<br />{h.info.cpu_info ? `${h.info.cpu_info.count} CPUs${h.info.cpu_info.virtualization ? ' (VT)' : ''}` : ''} {(h.extensions?.ip_address?.data ?? []).join(', ')}</> },
        { label: 'Capacity', value: (h) => (h.hypervisor_info ? `${h.hypervisor_info.vcpus} vCPU, ${Math.round(h.hypervisor_info.memory_mb / 1024)} GiB RAM, ${h.hypervisor_info.disk_gb} GiB disk, ${h.hypervisor_info.running_vms} servers` : '') },
        { label: 'Last seen', value: (h) => formatTime(h.info.last_response_time) },
        { label: 'Agent', value: (h) => h.agent_version ?? '' },
      ]}
      actions={(h, reload) => (
        <>
          {!h.roles.includes('hypervisor') && <ActionButton label="Make hypervisor" run={() => put('resmgr', `/hosts/${h.id}/roles/hypervisor`, {})} onDone={reload} />}
          {h.roles.map((role) => (
            <ActionButton label={`Remove ${role} role`} danger confirm={`Remove the ${role} role from ${h.info.hostname}?`} run={() => del('resmgr', `/hosts/${h.id}/roles/${role}`)} onDone={reload} />
          ))}
          <FormAction
            label="Deregister"
            fields={() => [{ name: 'force', label: 'Even with servers on it (they are then evacuated or set to ERROR)', type: 'checkbox' }]}
            submit={(v) => call('resmgr', `/hosts/${h.id}${v.force ? '?force=true' : ''}`, { method: 'DELETE' })}
            onDone={reload}
          />
        </>
      )}
    />
  )
}

export function HostsPage() {
  return (
    <>
      <HostsTable />
      <NetworkAgentsTable />
    </>
  )
}

interface RegistrationToken {
  token: string
  id: string
  expires_at: string
}

/** The commands to run on the new host: install pcctl from this control plane, then prep-node with the token. */
export function prepNodeLines(base: string, token: string): string {
  return `curl -fsSL ${shellWord(`${base}/downloads/install.sh`)} | sudo bash\nsudo pcctl prep-node --account-url ${shellWord(base)} --registration-token ${shellWord(token)}`
}

export function OnboardingPage() {
  const [created, setCreated] = useState<RegistrationToken>()
  const base = accountUrl(session()!)
  return (
    <section>
      <h1>Onboard a host</h1>
      <p>
        A host joins the cloud with a one-time registration token. Create one, then run the two lines below as root on the host (Ubuntu 22.04/24.04 or Debian 12 with Node.js 20). The host appears in the list
        below within seconds; then give it the <em>hypervisor</em> role.
      </p>
      <Form
        submitLabel="Create registration token"
        fields={[
          { name: 'hours', label: 'Valid for (hours)', type: 'number', min: 1, initial: '1' },
          { name: 'note', label: 'Note', placeholder: 'rack 4, node 12' },
        ]}
        submit={async (v) => setCreated(await post<RegistrationToken>('resmgr', '/registration-tokens', { expires_in: Math.round((Number(v.hours) || 1) * 3600), ...(v.note ? { note: v.note } : {}) }))}
      />
      {created && (
        <div class="notice" role="status">
          <p>
            Token created; it works once, until {formatTime(created.expires_at)}. It is shown only now. On the host, run:
          </p>
          <CopyBlock label="Commands to run on the host" text={prepNodeLines(base, created.token)} />
        </div>
      )}
      <HostsTable heading="h2" />
    </section>
  )
}
