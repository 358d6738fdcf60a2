/** Login: user name, password and domain; then the TOTP code when the user's MFA rules ask for one. */
import { useState } from 'preact/hooks'
import { login, loginWithTotp, sessionEndedReason, type Receipt } from '../api/session'
import { Form } from '../ui/components'

export function LoginPage() {
  const [receipt, setReceipt] = useState<Receipt>()
  const ended = sessionEndedReason()
  return (
    <main class="login" id="main">
      <h1>pcc</h1>
      <p class="muted">Private cloud console</p>
      {ended && !receipt && (
        <div class="notice" role="status">
          {ended}
        </div>
      )}
      {!receipt ? (
        <Form
          submitLabel="Log in"
          fields={[
            { name: 'username', label: 'User name', required: true, autocomplete: 'username', autofocus: true },
            { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' },
            { name: 'domain', label: 'Domain', initial: 'Default', required: true },
          ]}
          submit={async (v) => setReceipt(await login({ username: v.username as string, password: v.password as string, domain: v.domain as string }))}
        />
      ) : (
        <>
          <p>Your account needs a second factor. Enter the 6-digit code your authenticator app shows now.</p>
          <Form
            submitLabel="Verify"
            fields={[{ name: 'passcode', label: 'Authentication code', required: true, autocomplete: 'one-time-code', placeholder: '123456', autofocus: true }]}
            submit={(v) => loginWithTotp(receipt, (v.passcode as string).replace(/\s/g, ''))}
            onCancel={() => setReceipt(undefined)}
          />
        </>
      )}
    </main>
  )
}
