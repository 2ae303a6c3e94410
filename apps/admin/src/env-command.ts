import { credentialsPath, resolveConnection } from '@creditlab/client';
import { UsageError } from '@creditlab/cli';
import { adminCommand } from './admin-command';

/** `'…'` for a POSIX shell: single quotes, a single quote inside written as '\''. */
const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

export const env = adminCommand({
  name: 'env',
  line: 'shell exports of the server and key in use: eval "$(npm run -s admin -- env)"',
  synopsis: '[--server URL] [--key KEY]',
  summary:
    'Prints `export CREDITLAB_URL=…` and `export CREDITLAB_API_KEY=…` for the server and key the tools would use (the same resolution as every command: flags, else the environment, else the credentials file the server wrote on its first start), so that curl and scripts use them too. Contacts no server.',
  flags: {},
  examples: [
    'eval "$(npm run -s admin -- env)"   # then: curl -s "$CREDITLAB_URL/healthz"',
    'CREDITLAB_CREDENTIALS=/srv/creditlab/credentials.json npm run -s admin -- env',
  ],
  run(_client, values) {
    const { url, apiKey } = resolveConnection({ url: values.server, apiKey: values.key });
    if (!apiKey)
      throw new UsageError(
        `no API key for ${url}: neither --key nor CREDITLAB_API_KEY is set, and ${credentialsPath()} holds none for that server (the server writes it on its first start, unless CREDITLAB_ADMIN_KEY is set)`,
      );
    return Promise.resolve({
      json: { CREDITLAB_URL: url, CREDITLAB_API_KEY: apiKey },
      text: `export CREDITLAB_URL=${shellQuote(url)}\nexport CREDITLAB_API_KEY=${shellQuote(apiKey)}`,
    });
  },
});
