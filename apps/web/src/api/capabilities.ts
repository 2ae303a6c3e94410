import { gql } from './graphql';

/**
 * What the server's schema offers, as "Type.field" names (fields, input fields and enum values), read once per
 * sign-in. The app uses newer fields (server-binned histograms, metricSeries, children, jobs, the
 * runProgress subscription) where the server has them and falls back to older ones where not, so it
 * works against a server one release behind.
 */
export interface Capabilities {
  has(typeField: string): boolean;
  hasType(name: string): boolean;
}

const QUERY = `{ __schema { subscriptionType { name } types { name fields { name } inputFields { name } enumValues { name } } } }`;

interface SchemaAnswer {
  __schema: {
    subscriptionType: { name: string } | null;
    types: {
      name: string;
      fields: { name: string }[] | null;
      inputFields: { name: string }[] | null;
      enumValues: { name: string }[] | null;
    }[];
  };
}

let cached: { key: string; caps: Promise<Capabilities> } | undefined;

export function loadCapabilities(key: string): Promise<Capabilities> {
  if (cached?.key === key) return cached.caps;
  const caps = gql<SchemaAnswer>(QUERY).then(({ __schema }) => {
    const names = new Set<string>();
    const types = new Set<string>();
    for (const t of __schema.types) {
      types.add(t.name);
      for (const f of [...(t.fields ?? []), ...(t.inputFields ?? []), ...(t.enumValues ?? [])])
        names.add(`${t.name}.${f.name}`);
    }
    return { has: (tf: string) => names.has(tf), hasType: (n: string) => types.has(n) };
  });
  cached = { key, caps };
  caps.catch(() => (cached = undefined));
  return caps;
}
