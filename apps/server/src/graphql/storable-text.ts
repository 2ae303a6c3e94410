import type { ApolloServerPlugin } from '@apollo/server';
import { findUnstorable, formatPath, textProblem } from '@creditlab/events';
import { callersMistake } from './callers-mistake';
import { GraphQLError, Kind, type ASTNode, type ASTVisitor, type ValidationContext } from 'graphql';

/**
 * Text PostgreSQL cannot hold (a NUL, a lone surrogate) in a GraphQL argument, refused before the
 * operation runs: otherwise it reaches a query as a filter or a stored name and comes back as an
 * internal error. Ingest checks its input the same way (findUnstorable).
 */
export function storableTextRule(context: ValidationContext): ASTVisitor {
  return {
    StringValue(node, _key, parent, _path, ancestors) {
      const problem = textProblem(node.value);
      if (problem)
        context.reportError(
          new GraphQLError(`${placeOf([...ancestors, parent])}: ${problem}`, {
            nodes: node,
          }),
        );
    },
  };
}

/**
 * Where a literal is: `argument filter.nameContains`, from the argument and input fields that
 * enclose it, or `the default of variable $name`.
 */
function placeOf(enclosing: readonly (ASTNode | readonly ASTNode[] | undefined)[]): string {
  const nodes = enclosing.filter((a): a is ASTNode => a !== undefined && !Array.isArray(a));
  const variable = nodes.find((a) => a.kind === Kind.VARIABLE_DEFINITION);
  if (variable) return `the default of variable $${variable.variable.name.value}`;
  const path = nodes.flatMap((a) =>
    a.kind === Kind.ARGUMENT || a.kind === Kind.OBJECT_FIELD ? [a.name.value] : [],
  );
  return `argument ${path.join('.')}`;
}

/** The same for the operation's variables: a 400 naming the variable and the place within it. */
export function storableVariablesPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request }) {
          const issue = findUnstorable(request.variables ?? {});
          if (!issue) return;
          throw callersMistake(`variable $${formatPath(issue.path)}: ${issue.message}`, {
            code: 'BAD_USER_INPUT',
          });
        },
      };
    },
  };
}
