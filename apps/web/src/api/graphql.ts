import { currentKey, signOut } from './session';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

interface GraphQLResponse<T> {
  data?: T;
  errors?: { message: string; extensions?: { code?: string } }[];
  message?: string;
}

/** POSTs a GraphQL operation with the signed-in key; GraphQL errors become an ApiError. */
export async function gql<T>(
  query: string,
  variables: Record<string, unknown> = {},
  signal?: AbortSignal,
): Promise<T> {
  const key = currentKey();
  if (!key) throw new ApiError('not signed in', 'UNAUTHENTICATED');
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
    signal,
  });
  const body = (await res.json().catch(() => ({}))) as GraphQLResponse<T>;
  if (res.status === 401) {
    signOut();
    throw new ApiError(body.message ?? 'the API key was refused', 'UNAUTHENTICATED');
  }
  const first = body.errors?.[0];
  if (first) throw new ApiError(first.message, first.extensions?.code);
  if (!res.ok || !body.data) throw new ApiError(body.message ?? `HTTP ${res.status}`);
  return body.data;
}
