import {
  Kind,
  parse,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLResolveInfo,
} from 'graphql';
import { selectsField } from '../src/graphql/selects-field';

/** What a resolver of `steps` sees of this query: its field nodes and the document's fragments. */
function stepsInfo(query: string): GraphQLResolveInfo {
  const doc = parse(query);
  const fragments: Record<string, FragmentDefinitionNode> = {};
  const steps: FieldNode[] = [];
  for (const def of doc.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments[def.name.value] = def;
  }
  const visit = (node: { selectionSet?: { selections: readonly unknown[] } }) => {
    for (const s of (node.selectionSet?.selections ?? []) as FieldNode[]) {
      if (s.kind === Kind.FIELD && s.name.value === 'steps') steps.push(s);
      else visit(s);
    }
  };
  for (const def of doc.definitions) if (def.kind === Kind.OPERATION_DEFINITION) visit(def);
  return { fieldNodes: steps, fragments } as unknown as GraphQLResolveInfo;
}

test('a field selected directly, through an inline fragment or a named one (even nested) is selected', () => {
  expect(selectsField(stepsInfo('{ t { steps { index embedding } } }'), 'embedding')).toBe(true);
  expect(
    selectsField(stepsInfo('{ t { steps { ... on Step { embedding } } } }'), 'embedding'),
  ).toBe(true);
  const named = `{ t { steps { ...A } } } fragment A on Step { index ...B } fragment B on Step { embedding }`;
  expect(selectsField(stepsInfo(named), 'embedding')).toBe(true);
});

test('a field not selected is not, whatever else the query or its fragments select', () => {
  expect(selectsField(stepsInfo('{ t { steps { index reward } } }'), 'embedding')).toBe(false);
  // Selected elsewhere in the document, not under steps; and fragments that refer to each other.
  const elsewhere = `{ t { steps { ...A } embedding } } fragment A on Step { index ...B }
    fragment B on Step { reward ...A }`;
  expect(selectsField(stepsInfo(elsewhere), 'embedding')).toBe(false);
});
