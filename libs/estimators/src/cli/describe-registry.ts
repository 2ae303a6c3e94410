import { describeParamType, type ParamSpec } from '../registry/param-schema';
import { listMethods, type AnyMethod } from '../registry/registry';

/** The registry as plain JSON (what `estimate --list --json` prints and the API serves). */
export function registryAsJson() {
  return listMethods().map((m) => ({
    name: m.name,
    version: m.version,
    description: m.description,
    paper: m.paper,
    requires: m.requires,
    params: Object.entries(m.params).map(([name, spec]) => ({
      name,
      type: spec.type,
      default: spec.default ?? null,
      allowed: describeParamType(spec),
      description: spec.description,
    })),
    diagnostics: m.diagnostics,
  }));
}

/** The registry for a terminal: one block per method. */
export function registryAsText(): string {
  return listMethods().map(describeMethod).join('\n');
}

function describeMethod(m: AnyMethod): string {
  const lines = [`${m.name} (v${m.version}): ${m.description}`, `  paper: ${m.paper}`];
  if (m.requires.length > 0) lines.push(`  requires: ${m.requires.join(', ')}`);
  for (const [name, spec] of Object.entries(m.params))
    lines.push(`  --param ${describeParam(name, spec)}`);
  return lines.join('\n') + '\n';
}

function describeParam(name: string, spec: ParamSpec): string {
  const dflt = spec.default === undefined ? 'absent' : JSON.stringify(spec.default);
  return `${name}=… (default ${dflt}; ${describeParamType(spec)}): ${spec.description}`;
}
