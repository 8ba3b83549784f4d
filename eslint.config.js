// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The four parts talk over HTTP and share only schemas/ and lib/. */
const parts = ['operator', 'webhooks', 'gateway', 'dashboard'];

/** The gateway speaks API definitions, policies and keys, never Kubernetes objects. */
const gatewayImports = {
  paths: [{ name: '@kubernetes/client-node', message: 'The gateway never imports Kubernetes types.' }],
  patterns: [
    {
      group: ['**/lib/k8s/**', '**/operator/**', '**/webhooks/**', '**/dashboard/**'],
      message: 'The gateway imports only schemas/ and lib/ (not lib/k8s).',
    },
  ],
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'charts/**', 'docs/**', '**/testdata/**'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test runs and awaits the tests it registers.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { ignoreRestSiblings: true, argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object instead of enum.' },
        {
          // tsyringe (under @peculiar/x509) needs reflect-metadata loaded first: lib/x509.ts does both.
          selector: 'ImportDeclaration[source.value=/^(@peculiar\\/x509|reflect-metadata)$/]',
          message: 'Import `x509` from lib/x509.ts: it loads reflect-metadata before @peculiar/x509.',
        },
      ],
    },
  },
  {
    files: ['lib/x509.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object instead of enum.' },
      ],
    },
  },
  ...parts.map((part) => ({
    files: [`${part}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: parts
            .filter((p) => p !== part)
            .map((p) => ({
              group: [`**/${p}/**`, `../${p}/*`],
              message: `${part}/ may import only schemas/ and lib/; talk to ${p}/ over HTTP.`,
            })),
        },
      ],
    },
  })),
  {
    // The gateway speaks API definitions, policies and keys, never Kubernetes objects.
    files: ['gateway/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', gatewayImports],
    },
  },
  {
    // gateway/pipeline/ is the request path's framework floor (docs/design/gateway.md, "Middleware:
    // one contract"): it imports schemas/, lib/, itself and the event vocabulary (events/events.ts,
    // types that import only schemas/), never the parts it serves (store, limits, sessions,
    // metrics, streams, middleware, routes, server), so that none of them can make an import
    // circle through it. The gateway-wide restrictions (gatewayImports) are given again: a later
    // entry replaces an earlier one's options for the same rule.
    files: ['gateway/pipeline/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: gatewayImports.paths,
          patterns: [
            ...gatewayImports.patterns,
            {
              regex: '^\\.\\./(?!\\.\\./|events/events\\.ts$)',
              message:
                'gateway/pipeline/ is the framework floor: it imports only schemas/, lib/ and pipeline/ (and the event types); pass what it needs in, or define the type here.',
            },
          ],
        },
      ],
    },
  },
  {
    // client-node's models are classes that its serializer reads as plain data; object
    // literals (and spreads of objects it returned) are its documented way of building them.
    files: ['lib/k8s/**/*.ts', 'operator/**/*.ts', 'webhooks/**/*.ts', 'e2e/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      '@typescript-eslint/no-misused-spread': 'off',
    },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
);
