import { EstimatorInputError } from '../errors';

interface Described {
  /** One line: what the parameter means (shown by `estimate --list` and GraphQL). */
  description: string;
}

interface NumberRange {
  min?: number;
  max?: number;
  /** Bounds are inclusive unless marked exclusive. */
  exclusiveMin?: boolean;
  exclusiveMax?: boolean;
  integer?: boolean;
}

export interface NumberParam extends Described, NumberRange {
  type: 'number';
  default: number;
}

/** A number whose absence is meaningful (e.g. GiGPO's similarity threshold: absent = exact grouping). */
export interface OptionalNumberParam extends Described, NumberRange {
  type: 'number';
  default?: undefined;
  optional: true;
}

export interface BooleanParam extends Described {
  type: 'boolean';
  default: boolean;
}

export interface EnumParam<V extends string = string> extends Described {
  type: 'enum';
  values: readonly V[];
  default: V;
}

export type ParamSpec = NumberParam | OptionalNumberParam | BooleanParam | EnumParam;
export type ParamSchema = Readonly<Record<string, ParamSpec>>;

type ValueOf<S extends ParamSpec> = S extends OptionalNumberParam
  ? number | undefined
  : S extends NumberParam
    ? number
    : S extends BooleanParam
      ? boolean
      : S extends EnumParam<infer V>
        ? V
        : never;

/** The parameter object a method receives: every parameter present and valid. */
export type ResolvedParams<S extends ParamSchema> = { readonly [K in keyof S]: ValueOf<S[K]> };

/**
 * Applies defaults and validates `given` against `schema`. The result lists
 * parameters in schema order (the order the output echoes them) and leaves out
 * optional parameters that were not given.
 */
export function resolveParams<S extends ParamSchema>(
  method: string,
  schema: S,
  given: Readonly<Record<string, unknown>> = {},
): ResolvedParams<S> {
  // Callers pass JSON from the wire: a number or text would otherwise read as no or odd names.
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new EstimatorInputError(
      'INVALID_PARAMETER',
      `the parameters of method "${method}" must be an object of names and values, e.g. ${example(schema)}, got ${shown(given)}`,
    );
  }
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(schema, name)) {
      throw new EstimatorInputError(
        'UNKNOWN_PARAMETER',
        `unknown parameter "${name}" for method "${method}"; valid parameters: ${Object.keys(schema).join(', ')}`,
      );
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema)) {
    const value = given[name];
    if (value === undefined) {
      if (spec.default !== undefined) out[name] = spec.default;
      continue;
    }
    if (!isValid(spec, value)) {
      throw new EstimatorInputError(
        'INVALID_PARAMETER',
        `parameter "${name}" of method "${method}" must be ${describeParamType(spec)}, got ${shown(value)}`,
      );
    }
    out[name] = value;
  }
  return out as ResolvedParams<S>;
}

/**
 * Reads a parameter value written as text (`--param gamma=0.9`): numbers,
 * booleans and strings are told apart by the schema, so an enum value that
 * looks like a number stays a string. Unparseable text is passed through
 * unchanged for `resolveParams` to reject with the full message.
 */
export function parseParamText(schema: ParamSchema, name: string, text: string): unknown {
  const spec = schema[name];
  if (spec === undefined) return text;
  if (spec.type === 'number') {
    const x = text.trim() === '' ? NaN : Number(text);
    return Number.isNaN(x) ? text : x;
  }
  if (spec.type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/** e.g. `a number in [0, 1]`, `an integer ≥ 1`, `one of "mean-std", "mean"`. */
export function describeParamType(spec: ParamSpec): string {
  if (spec.type === 'boolean') return 'true or false';
  if (spec.type === 'enum') return `one of ${spec.values.map((v) => JSON.stringify(v)).join(', ')}`;
  const kind = spec.integer ? 'an integer' : 'a number';
  const { min, max } = spec;
  if (min !== undefined && max !== undefined) {
    const open = spec.exclusiveMin ? '(' : '[';
    const close = spec.exclusiveMax ? ')' : ']';
    return `${kind} in ${open}${min}, ${max}${close}`;
  }
  if (min !== undefined) return `${kind} ${spec.exclusiveMin ? '>' : '≥'} ${min}`;
  if (max !== undefined) return `${kind} ${spec.exclusiveMax ? '<' : '≤'} ${max}`;
  return kind;
}

function isValid(spec: ParamSpec, value: unknown): boolean {
  switch (spec.type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'enum':
      return typeof value === 'string' && spec.values.includes(value);
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return false;
      if (spec.integer && !Number.isInteger(value)) return false;
      if (spec.min !== undefined && (spec.exclusiveMin ? value <= spec.min : value < spec.min))
        return false;
      if (spec.max !== undefined && (spec.exclusiveMax ? value >= spec.max : value > spec.max))
        return false;
      return true;
    }
  }
}

/** A value as the caller wrote it: JSON, except numbers JSON cannot say (1e999 parses to Infinity). */
function shown(value: unknown): string {
  return typeof value === 'number' && !Number.isFinite(value)
    ? String(value)
    : (JSON.stringify(value) ?? String(value));
}

/** The method's first parameter at its default, as an example of a parameters object. */
function example(schema: ParamSchema): string {
  const first = Object.entries(schema)[0];
  return first ? `{${JSON.stringify(first[0])}: ${shown(first[1].default)}}` : '{}';
}
