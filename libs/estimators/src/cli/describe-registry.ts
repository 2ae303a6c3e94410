import { describeParamType, type ParamSpec } from '../registry/param-schema';
import { listMethods, type AnyMethod } from '../registry/registry';
export { registryAsJson } from '../registry/registry-json';

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
