import { choiceFlag, integerFlag, UsageError } from '@creditlab/cli';
import { adminCommand, table } from './admin-command';

const KEY_FIELDS = 'id prefix name project role rateLimitPerMinute createdAt lastUsedAt revokedAt';

interface KeyRow {
  id: string;
  prefix: string;
  name: string;
  project: string | null;
  role: string;
  rateLimitPerMinute: number | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export const whoami = adminCommand({
  name: 'whoami',
  line: 'the key in use: prefix, project, role',
  synopsis: '[options]',
  summary: 'Shows the key in use (its public prefix, project and role) and the server it talks to.',
  flags: {},
  examples: [
    'npm run admin -- whoami',
    'npm run admin -- whoami --server https://creditlab.lab.internal --key "$KEY"',
  ],
  async run(client) {
    const c = client();
    const { viewer } = await c.graphql<{ viewer: Record<string, unknown> }>(
      '{ viewer { keyId prefix project role rateLimitPerMinute } }',
    );
    return {
      json: viewer,
      text: `cl_${String(viewer.prefix)}_…  role ${String(viewer.role)}  project ${String(viewer.project ?? '(every project)')}  at ${c.url}`,
    };
  },
});

export const keys = adminCommand({
  name: 'keys',
  line: 'keys: id, prefix, role, project, last use',
  synopsis: '[--project P] [--all] [options]',
  summary:
    'Lists the API keys this admin key sees (by public prefix; a key itself is never shown again).',
  flags: {
    project: {
      type: 'string',
      value: 'P',
      help: "only this project's keys",
      byDefault: 'every project this key sees',
    },
    all: { type: 'boolean', help: 'revoked keys too', byDefault: 'off' },
  },
  examples: ['npm run admin -- keys --project lab-a', 'npm run admin -- keys --all --json'],
  async run(client, values) {
    const { apiKeys } = await client().graphql<{ apiKeys: KeyRow[] }>(
      `query($p: String, $all: Boolean!) { apiKeys(project: $p, includeRevoked: $all) { ${KEY_FIELDS} } }`,
      { p: values.project ?? null, all: values.all ?? false },
    );
    return {
      json: apiKeys,
      text: table(
        ['ID', 'KEY', 'ROLE', 'PROJECT', 'NAME', 'LAST USED', 'REVOKED'],
        apiKeys.map((k) => [
          k.id,
          `cl_${k.prefix}_…`,
          k.role,
          k.project ?? '(every project)',
          k.name,
          k.lastUsedAt ?? '-',
          k.revokedAt ?? '-',
        ]),
      ),
    };
  },
});

export const createKey = adminCommand({
  name: 'create-key',
  line: 'a new key, printed once (only its hash is stored)',
  synopsis: '--role read|write|admin [--project P] [--name N] [--rate-limit N] [options]',
  summary:
    'Creates an API key and prints it once. read: queries; write: also ingest, online advantages, recompute, fork, finish-run; admin: also keys and projects.',
  flags: {
    role: { type: 'string', value: 'R', help: 'read, write or admin', byDefault: 'none: required' },
    project: {
      type: 'string',
      value: 'P',
      help: 'the project the key is confined to',
      byDefault:
        "this admin key's project; for an admin key over every project, a key over every project",
    },
    name: { type: 'string', value: 'N', help: 'a name to recognise it by', byDefault: 'none' },
    'rate-limit': {
      type: 'string',
      value: 'N',
      help: 'requests per minute',
      byDefault: "the server's CREDITLAB_RATE_LIMIT_PER_MINUTE",
    },
  },
  examples: [
    'npm run admin -- create-key --project lab-a --role write --name alice',
    'npm run admin -- create-key --project lab-a --role read --rate-limit 600',
  ],
  async run(client, values) {
    const role = choiceFlag('role', values.role, ['read', 'write', 'admin'] as const);
    if (!role) throw new UsageError('create-key needs --role read|write|admin');
    const rateLimit = integerFlag('rate-limit', values['rate-limit'], 1) ?? null;
    const { createApiKey } = await client().graphql<{
      createApiKey: { key: string; apiKey: KeyRow };
    }>(
      `mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key apiKey { ${KEY_FIELDS} } } }`,
      {
        i: {
          project: values.project ?? null,
          role,
          name: values.name ?? null,
          rateLimitPerMinute: rateLimit,
        },
      },
    );
    const k = createApiKey.apiKey;
    return {
      json: createApiKey,
      text:
        `${createApiKey.key}\n\n` +
        `${k.role} key for ${k.project ? `project ${k.project}` : 'every project'} (id ${k.id}).\n` +
        'This is the only time the key is shown: store it now (only its hash is kept).',
    };
  },
});

export const revokeKey = adminCommand({
  name: 'revoke-key',
  line: 'revokes a key at once',
  synopsis: 'ID|PREFIX [options]',
  summary: 'Revokes a key, by id or public prefix; requests with it are refused from then on.',
  flags: {},
  positionals: ['ID|PREFIX'],
  examples: ['npm run admin -- revoke-key 5c81cded'],
  async run(client, _values, [id]) {
    const { revokeApiKey } = await client().graphql<{ revokeApiKey: KeyRow | null }>(
      `mutation($id: ID!) { revokeApiKey(id: $id) { ${KEY_FIELDS} } }`,
      { id },
    );
    if (!revokeApiKey) throw new UsageError(`key ${id} not found`);
    return {
      json: revokeApiKey,
      text: `revoked cl_${revokeApiKey.prefix}_… at ${revokeApiKey.revokedAt}`,
    };
  },
});
