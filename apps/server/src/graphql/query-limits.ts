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

/** Rejects operations nested deeper than `maxDepth` fields (fragments followed). */
export function depthLimitRule(maxDepth: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>(
      context
        .getDocument()
        .definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
        .map((f) => [f.name.value, f]),
    );
    const depth = (set: SelectionSetNode | undefined, seen: Set<string>): number => {
      if (!set) return 0;
      let max = 0;
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD)
          max = Math.max(
            max,
            sel.name.value.startsWith('__') ? 0 : 1 + depth(sel.selectionSet, seen),
          );
        else if (sel.kind === Kind.INLINE_FRAGMENT)
          max = Math.max(max, depth(sel.selectionSet, seen));
        else if (!seen.has(sel.name.value)) {
          max = Math.max(
            max,
            depth(fragments.get(sel.name.value)?.selectionSet, new Set([...seen, sel.name.value])),
          );
        }
      }
      return max;
    };
    return {
      OperationDefinition(node) {
        const d = depth(node.selectionSet, new Set());
        if (d > maxDepth) {
          context.reportError(
            // Apollo reports every validation failure as GRAPHQL_VALIDATION_FAILED.
            new GraphQLError(`query depth ${d} exceeds the limit of ${maxDepth}`),
          );
        }
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
          const cost = getComplexity({
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
          if (cost > maxCost) {
            throw new GraphQLError(
              `query cost ${cost} exceeds the limit of ${maxCost}; ask for smaller pages`,
              {
                extensions: { code: 'QUERY_TOO_COSTLY', cost, maxCost },
              },
            );
          }
        },
      };
    },
  };
}
