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
)
