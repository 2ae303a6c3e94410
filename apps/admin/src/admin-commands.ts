import type { CreditlabClient } from '@creditlab/client';

/** A mistake of the caller (usage, or a 4xx the server gave): exit status 2. */
export class UsageError extends Error {}

export const USAGE = `npm run admin -- <command> [options]

  whoami                                   the key in use: prefix, project, role
  projects                                 the projects this key sees
  create-project <name> [--description T]  (admin key over every project)
  keys [--project P] [--all]               keys (--all: revoked ones too)
  create-key --role read|write|admin [--project P] [--name N] [--rate-limit N]
                                           prints the new key once; only its hash is stored
  revoke-key <id|prefix>

  --server URL, --key KEY   default: CREDITLAB_URL / CREDITLAB_API_KEY, else ~/.creditlab/credentials.json
  --json                    machine-readable output`;

export interface CommandInput {
  positionals: string[];
  values: {
    project?: string;
    role?: string;
    name?: string;
    description?: string;
    'rate-limit'?: string;
    all?: boolean;
  };
}

/** What a command prints: JSON for --json, else lines for a person. */
export interface CommandOutput {
  json: unknown;
  text: string;
}

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

export async function runCommand(
  client: CreditlabClient,
  command: string | undefined,
  input: CommandInput,
): Promise<CommandOutput> {
  const { positionals, values } = input;
  switch (command) {
    case 'whoami': {
      const { viewer } = await client.graphql<{ viewer: Record<string, unknown> }>(
        '{ viewer { keyId prefix project role rateLimitPerMinute } }',
      );
      return {
        json: viewer,
        text: `cl_${String(viewer.prefix)}_…  role ${String(viewer.role)}  project ${String(viewer.project ?? '(every project)')}  at ${client.url}`,
      };
    }
    case 'projects': {
      const { projects } = await client.graphql<{
        projects: { name: string; description: string; createdAt: string }[];
      }>('{ projects { name description createdAt } }');
      return {
        json: projects,
        text: table(
          ['PROJECT', 'CREATED', 'DESCRIPTION'],
          projects.map((p) => [p.name, p.createdAt, p.description]),
        ),
      };
    }
    case 'create-project': {
      const name = only(positionals, 'create-project <name>');
      const { createProject } = await client.graphql<{ createProject: { name: string } }>(
        'mutation($n: String!, $d: String) { createProject(name: $n, description: $d) { name description createdAt } }',
        { n: name, d: values.description ?? null },
      );
      return { json: createProject, text: `created project ${createProject.name}` };
    }
    case 'keys': {
      const { apiKeys } = await client.graphql<{ apiKeys: KeyRow[] }>(
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
    }
    case 'create-key': {
      if (!values.role) throw new UsageError('create-key needs --role read|write|admin');
      const rateLimit = values['rate-limit'] === undefined ? null : Number(values['rate-limit']);
      if (rateLimit !== null && !(Number.isInteger(rateLimit) && rateLimit > 0))
        throw new UsageError(`--rate-limit: a positive integer, got ${values['rate-limit']}`);
      if (!['read', 'write', 'admin'].includes(values.role))
        throw new UsageError(`--role: read, write or admin, got ${values.role}`);
      const { createApiKey } = await client.graphql<{
        createApiKey: { key: string; apiKey: KeyRow };
      }>(
        `mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key apiKey { ${KEY_FIELDS} } } }`,
        {
          i: {
            project: values.project ?? null,
            role: values.role,
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
    }
    case 'revoke-key': {
      const id = only(positionals, 'revoke-key <id|prefix>');
      const { revokeApiKey } = await client.graphql<{ revokeApiKey: KeyRow | null }>(
        `mutation($id: ID!) { revokeApiKey(id: $id) { ${KEY_FIELDS} } }`,
        { id },
      );
      if (!revokeApiKey) throw new UsageError(`key ${id} not found`);
      return {
        json: revokeApiKey,
        text: `revoked cl_${revokeApiKey.prefix}_… at ${revokeApiKey.revokedAt}`,
      };
    }
    default:
      throw new UsageError(command ? `unknown command ${command}\n\n${USAGE}` : USAGE);
  }
}

function only(positionals: string[], usage: string): string {
  if (positionals.length !== 1 || !positionals[0]) throw new UsageError(`usage: ${usage}`);
  return positionals[0];
}

function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((v, c) => v.padEnd(widths[c] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
