import type { Request } from 'express';
import { operationKind } from '../src/graphql/operation-kind';

const post = (body: unknown) => ({ method: 'POST', body }) as unknown as Request;
const get = (query: Record<string, string>) => ({ method: 'GET', query }) as unknown as Request;
const TWO =
  'query Runs { runs { nodes { id } } } mutation Finish { finishRun(runId: "r", status: FAILED) { id } }';

test('the operation a request runs decides where its reads go: its kind, read from the document', () => {
  expect(operationKind(post({ query: '{ runs { nodes { id } } }' }), 1000)).toBe('query');
  expect(operationKind(post({ query: 'mutation { createRun(input: {}) { id } }' }), 1000)).toBe(
    'mutation',
  );
  expect(operationKind(post({ query: 'subscription { runUpdated { id } }' }), 1000)).toBe(
    'subscription',
  );
  expect(operationKind(get({ query: 'query { run(id: "x") { id } }' }), 1000)).toBe('query');
  // Of several operations, the one named; without a name Apollo refuses it, and so no kind.
  expect(operationKind(post({ query: TWO, operationName: 'Finish' }), 1000)).toBe('mutation');
  expect(operationKind(post({ query: TWO, operationName: 'Runs' }), 1000)).toBe('query');
  expect(operationKind(post({ query: TWO }), 1000)).toBeUndefined();
});

test('a request whose operation cannot be told has none (its reads go to the primary)', () => {
  expect(operationKind(post({ query: '{ runs { ' }), 1000)).toBeUndefined(); // does not parse
  expect(operationKind(post({ query: '{ a b c d e f }' }), 3)).toBeUndefined(); // over maxTokens
  expect(operationKind(post([{ query: '{ runs { nodes { id } } }' }]), 1000)).toBeUndefined();
  expect(operationKind(post({ query: 42 }), 1000)).toBeUndefined();
  expect(operationKind(post(undefined), 1000)).toBeUndefined();
});
