/** Key pairs: create (the private key is downloaded once), import a public key, delete. */
import { useState } from 'preact/hooks'
import { del, post } from '../api/http'
import { listKeypairs, type Keypair } from '../api/resources'
import { ActionButton, CopyBlock, Dialog, download } from '../ui/components'
import { FormAction, ResourceList } from '../ui/resource-list'

export function KeypairsPage() {
  const [created, setCreated] = useState<{ name: string; key: string }>()
  return (
    <>
      <ResourceList<Keypair>
        title="Key pairs"
        load={listKeypairs}
        rowKey={(k) => k.name}
        empty="No key pairs. Create one, or import the public key you already use."
        tools={(reload) => (
          <FormAction
            label="Import public key"
            fields={() => [
              { name: 'name', label: 'Name', required: true },
              { name: 'publicKey', label: 'Public key', type: 'textarea', required: true, placeholder: 'ssh-ed25519 AAAA… you@laptop', help: 'The contents of ~/.ssh/id_ed25519.pub or id_rsa.pub.' },
            ]}
            submit={(v) => post('compute', '/os-keypairs', { keypair: { name: v.name, public_key: (v.publicKey as string).trim() } })}
            onDone={reload}
          />
        )}
        create={{
          label: 'Create key pair',
          fields: () => [{ name: 'name', label: 'Name', required: true, help: 'The private key is shown and downloaded once; pcc does not keep it.' }],
          submit: async (v) => {
            const body = await post<{ keypair: Keypair & { private_key?: string } }>('compute', '/os-keypairs', { keypair: { name: v.name } })
            if (body.keypair.private_key) {
              download(`${body.keypair.name}.pem`, body.keypair.private_key, 'application/x-pem-file')
              setCreated({ name: body.keypair.name, key: body.keypair.private_key })
            }
          },
        }}
        columns={[
          { label: 'Name', value: (k) => k.name },
          { label: 'Type', value: (k) => k.type ?? 'ssh' },
          { label: 'Fingerprint', value: (k) => <code>{k.fingerprint}</code> },
        ]}
        actions={(k, reload) => <ActionButton label="Delete" danger confirm={`Delete key pair ${k.name}?`} run={() => del('compute', `/os-keypairs/${encodeURIComponent(k.name)}`)} onDone={reload} />}
      />
      {created && (
        <Dialog title={`Private key of ${created.name}`} onClose={() => setCreated(undefined)}>
          <p>
            It was saved as <code>{created.name}.pem</code> in your downloads. This is the only time it is shown. Keep it with <code>chmod 600</code>.
          </p>
          <CopyBlock label="Private key" text={created.key} />
        </Dialog>
      )}
    </>
  )
}
