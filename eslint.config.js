import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  // client/schema.d.ts is generated (npm run client).
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'client/schema.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', {
        // node:test's test()/describe() return promises the runner itself awaits.
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }]
      }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: 'error',
      'no-console': 'off'
    }
  },
  {
    // Every transaction of the service is opened by write (a unit of work, src/db/write.ts; on
    // SQLite the group commit's, src/db/group-commit.ts), so that the precompiled queries run
    // inside it are not built again on every request, and every precompiled query runs through
    // execute, which skips Kysely's promise chain where that is safe (src/db/compiled.ts).
    files: ['src/**/*.ts'],
    ignores: ['src/db/write.ts', 'src/db/group-commit.ts', 'src/db/compiled.ts', 'src/db/sqlite-connection.ts'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: "CallExpression[callee.property.name='transaction'][arguments.length=0]",
        message: 'Write through a unit of work: write(db, work) (src/db/write.ts).'
      }, {
        selector: "CallExpression[callee.property.name='executeQuery']",
        message: 'Run a compiled query with execute (src/db/compiled.ts).'
      }]
    }
  },
  {
    // The service formats and orders text without ICU: the first locale-sensitive call pages in
    // ICU's data from the node binary, 3 to 8 MiB of resident memory that the process keeps
    // (docs/PERFORMANCE.md, Memory). The browser console (console/) is not the service.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error',
        ...['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString', 'localeCompare', 'toLocaleUpperCase', 'toLocaleLowerCase'].map((property) => ({
          property, message: 'Locale-sensitive: it loads ICU data into the service (several MiB resident). Format or compare by code unit.'
        }))],
      'no-restricted-globals': ['error', { name: 'Intl', message: 'Locale-sensitive: it loads ICU data into the service (several MiB resident).' }]
    }
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } }
  }
)
