import { describeParamType } from './param-schema';
import { listMethods } from './registry';

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
