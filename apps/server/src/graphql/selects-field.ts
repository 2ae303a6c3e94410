import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether the query selects `name` on the field being resolved (directly, or through inline fragments
 * and named fragments): for data that costs a read of its own only when asked for.
 */
export function selectsField(info: GraphQLResolveInfo, name: string): boolean {
  const seen = new Set<string>();
  const within = (set: SelectionSetNode | undefined): boolean =>
    (set?.selections ?? []).some((selection) => {
      if (selection.kind === Kind.FIELD) return selection.name.value === name;
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      const fragment = selection.name.value;
      if (seen.has(fragment)) return false;
      seen.add(fragment);
      return within(info.fragments[fragment]?.selectionSet);
    });
  return info.fieldNodes.some((node) => within(node.selectionSet));
}
