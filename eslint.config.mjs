import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import jest from 'eslint-plugin-jest';
import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-test/**',
      'node_modules/**',
      'coverage/**',
      'libs/db/src/generated/**',
      'apps/web/dist*/**',
      // deliberate mistakes, linted by test/lint-rules.e2e.spec.ts
      'test/fixtures/lint/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        process: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'error',
    },
  },
  {
    // Type-aware rules: a promise nobody awaits loses its error (and, in a server, its request).
    files: ['**/*.ts', 'apps/web/src/**/*.tsx'],
    languageOptions: {
      parserOptions: {
        // lint-check.ts: the name test/lint-rules.e2e.spec.ts lints from stdin at a lib's or app's path.
        projectService: {
          allowDefaultProject: ['libs/*/src/lint-check.ts', 'apps/*/src/lint-check.ts'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // Dependencies point one way: libs never import apps; shipped code never imports tests or
    // benchmarks; a lib reaches another lib by its package name, never by a relative path.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            { target: './libs', from: './apps', message: 'libs never import apps.' },
            {
              target: './apps',
              from: ['./test', './bench'],
              message: 'apps never depend on tests or benchmarks.',
            },
            ...readdirSync('libs').map((lib) => ({
              target: `./libs/${lib}/src`,
              from: ['./test', './bench', './apps'],
              message: 'a library never depends on tests, benchmarks or apps.',
            })),
          ],
        },
      ],
    },
  },
  {
    // Inside libs and apps, another lib is reached by its package name (tests at the top level may
    // reach into a lib's internals to test them).
    files: ['libs/**/*.ts', 'apps/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(libs/)?[a-z-]+/src(/|$)',
              message: 'import another lib by its package name (@creditlab/…), not by a path.',
            },
          ],
        },
      ],
    },
  },
  {
    // The estimator library is pure: no framework, no database, no network.
    files: ['libs/estimators/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(libs/)?[a-z-]+/src(/|$)',
              message: 'import another lib by its package name (@creditlab/…), not by a path.',
            },
            {
              group: ['@nestjs/*', '@prisma/*', 'pg', 'pg-*', 'express', 'dataloader', 'undici'],
              message: 'libs/estimators stays free of Nest, databases and the network.',
            },
            {
              group: ['@creditlab/*', '!@creditlab/estimators'],
              message: 'libs/estimators depends on no other Creditlab package.',
            },
            {
              group: ['node:http', 'node:https', 'node:net', 'node:dgram', 'http', 'https', 'net'],
              message: 'libs/estimators stays off the network.',
            },
          ],
        },
      ],
    },
  },
  {
    // A focused or skipped test silently shrinks the suite.
    files: ['**/*.spec.ts', '**/*.fixture.ts'],
    plugins: { jest },
    rules: {
      'jest/no-focused-tests': 'error',
      'jest/no-disabled-tests': 'error',
    },
  },
  {
    // Command-line entry points and benchmarks talk to the terminal on purpose.
    files: ['**/cli/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests build and break JSON documents on purpose; typing every mutation adds nothing.
    files: ['**/*.spec.ts', '**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
