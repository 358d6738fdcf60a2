import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-restricted-properties': ['error', { object: 'test', property: 'only', message: 'no .only in committed tests' }, { object: 'describe', property: 'only', message: 'no .only in committed tests' }, { object: 'it', property: 'only', message: 'no .only in committed tests' }],
    },
  },

  // The tree is laid out by where code runs (docs/architecture.md): contracts are what both sides agree on and
  // import nothing of either; pcc-agent's code (host/) never reaches into the control plane; the control plane
  // (server/) reaches host code only through its all-in-one module, which runs hosts inside pcc-server.
  {
    files: ['src/contracts/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./(\\.\\./)*(server|host|lib|cli|client|testkit|web|guest-image)/', message: 'src/contracts holds wire types only: it imports nothing outside contracts.' }] }] },
  },
  {
    files: ['src/lib/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./(\\.\\./)*(server|host|cli|client|testkit|web|guest-image)/', message: 'src/lib is code both sides run: it imports only contracts.' }] }] },
  },
  {
    files: ['src/host/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./(\\.\\./)*(server|cli|client|web)/', message: 'src/host runs in pcc-agent: it never imports the control plane (share a type through src/contracts/host).' }] }] },
  },
  {
    files: ['src/server/**/*.ts'],
    ignores: ['src/server/all-in-one/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./(\\.\\./)*host/', message: 'The control plane reaches hosts through src/contracts/host and the command channel; only src/server/all-in-one/ may run host code in process.' }] }] },
  },
)
