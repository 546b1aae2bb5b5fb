// ESLint for the whole repository: the server, its tests and scripts, the admin UI and the client, type-aware
// (each part with its own tsconfig), so rules that need types, such as switch-exhaustiveness-check, see them.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', 'node_modules/**', 'web/dist/**', 'artifacts/**', 'coverage/**', 'clients/typescript/src/schema.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['vite.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A switch over a union names every member: a new command, status or event that a switch misses does not compile
      // quietly into its default branch.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: false, requireDefaultForNonUnion: false }],
      // A promise is awaited, returned or explicitly voided: nothing fails unseen.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // The code reads untyped JSON (bodies, platform answers) through validated shapes; `any` stays where a test pokes
      // at a document's structure.
      '@typescript-eslint/no-explicit-any': 'off',
      // A variable assigned once after a closure that reads it is declared before the closure, on purpose.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
