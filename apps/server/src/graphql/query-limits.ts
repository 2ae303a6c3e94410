import type { ApolloServerPlugin } from '@apollo/server';
import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import {
  fieldExtensionsEstimator,
  getComplexity,
  simpleEstimator,
  type ComplexityEstimator,
} from 'graphql-query-complexity';
import { callersMistake } from './callers-mistake';

/**
 * Rejects operations nested deeper than `maxDepth` fields, or that expand (fragments spread in
 * place) to more than `maxFields` fields. Linear in the document: each fragment's depth and size
 * are worked out once, however often it is spread, so a document of fragments that spread the
 * next one twice costs no more to check than to read (and is refused before the cost analysis,
 * which expands fragments, ever sees it).
 */
export function documentLimitsRule(maxDepth: number, maxFields: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>(
      context
        .getDocument()
        .definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
        .map((f) => [f.name.value, f]),
    );
    type Measure = { depth: number; fields: number };
    const memo = new Map<string, Measure>();
    const open = new Set<string>(); // a cycle is NoFragmentCyclesRule's to report
    const fragment = (name: string): Measure => {
      const known = memo.get(name);
      if (known) return known;
      if (open.has(name)) return { depth: 0, fields: 0 };
      open.add(name);
      const m = measure(fragments.get(name)?.selectionSet);
      open.delete(name);
      memo.set(name, m);
      return m;
    };
    const measure = (set: SelectionSetNode | undefined): Measure => {
      const out = { depth: 0, fields: 0 };
      for (const sel of set?.selections ?? []) {
        let m: Measure;
        if (sel.kind === Kind.FIELD) {
          const child = measure(sel.selectionSet);
          m = sel.name.value.startsWith('__')
            ? { depth: 0, fields: 1 }
            : { depth: 1 + child.depth, fields: 1 + child.fields };
        } else if (sel.kind === Kind.INLINE_FRAGMENT) m = measure(sel.selectionSet);
        else m = fragment(sel.name.value);
        out.depth = Math.max(out.depth, m.depth);
        out.fields += m.fields;
      }
      return out;
    };
    return {
      OperationDefinition(node) {
        const { depth, fields } = measure(node.selectionSet);
        // Apollo reports every validation failure as GRAPHQL_VALIDATION_FAILED.
        if (depth > maxDepth)
          context.reportError(
            new GraphQLError(`query depth ${depth} exceeds the limit of ${maxDepth}`),
          );
        if (fields > maxFields)
          context.reportError(
            new GraphQLError(
              `query expands to ${fields > 1e15 ? fields.toExponential(2) : fields} fields (fragments spread in place), more than the limit of ${maxFields}`,
            ),
          );
      },
    };
  };
}

/**
 * Cost ≈ the number of objects an operation can return: an object field costs
 * its page size × (1 + its children's cost), where the page size is `first`
 * when the field takes it, else the typical size of that list (G trajectories
 * per group, steps per trajectory), else 1; scalar fields are free. An
 * operation over `maxCost` is refused before it runs.
 */
const TYPICAL_LIST_SIZE: Record<string, number> = { trajectories: 16, steps: 50, iterations: 100 };
const objectCountEstimator: ComplexityEstimator = ({ args, childComplexity, field, node }) => {
  if (!node.selectionSet) return 0;
  const first = typeof args.first === 'number' ? args.first : undefined;
  return (first ?? TYPICAL_LIST_SIZE[field.name] ?? 1) * (1 + childComplexity);
};

export function complexityLimitPlugin(maxCost: number): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, schema }) {
          let cost: number;
          try {
            cost = getComplexity({
              schema,
              operationName: request.operationName,
              query: document,
              variables: request.variables,
              estimators: [
                fieldExtensionsEstimator(),
                objectCountEstimator,
                simpleEstimator({ defaultComplexity: 0 }),
              ],
            });
          } catch (e) {
            // Costing coerces the variables first, so a bad variable (a status not in the enum, a
            // malformed date) fails here: the caller's mistake, told as graphql-js words it.
            if (e instanceof GraphQLError)
              throw callersMistake(e.message, { code: 'BAD_USER_INPUT' });
            throw e;
          }
          if (cost > maxCost) {
            throw callersMistake(
              `query cost ${cost} exceeds the limit of ${maxCost}; ask for smaller pages`,
              { code: 'QUERY_TOO_COSTLY', cost, maxCost },
            );
          }
        },
      };
    },
  };
}
