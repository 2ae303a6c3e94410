import {
  buildSchema,
  execute,
  parse,
  subscribe,
  type ExecutionResult,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { limitReturnedItems } from '../src/graphql/returned-items-limit';

/**
 * The count of what lists return, on a small schema of its own run through graphql-js: which
 * requests it stops, how it weighs items, and whose tally an item goes to.
 */
const schema = limitReturnedItems(
  withResolvers(
    buildSchema(`
      type Obj { x: Int! }
      type SeriesPoint { iteration: Int! value: Float! }
      type Tick { objs: [Obj!]! }
      scalar JSON
      type Query {
        objs(n: Int!): [Obj!]!
        numbers(n: Int!): [Float!]!
        points(n: Int!): [SeriesPoint!]!
        blob(numbers: Int!, text: Int!): JSON
        text(length: Int!): String
        texts(n: Int!, length: Int!): [String!]!
      }
      type Mutation { make(n: Int!): [Obj!]! }
      type Subscription { ticks(messages: Int!, n: Int!): Tick! }
    `),
  ),
  100,
);

const objs = (n: number) => Array.from({ length: n }, (_, x) => ({ x }));

function withResolvers(s: GraphQLSchema): GraphQLSchema {
  const field = (type: string, name: string) =>
    (s.getType(type) as GraphQLObjectType).getFields()[name]!;
  field('Query', 'objs').resolve = (_: unknown, { n }: { n: number }) => objs(n);
  // A promise, as a DataLoader's answer is.
  field('Query', 'numbers').resolve = async (_: unknown, { n }: { n: number }) =>
    new Array<number>(n).fill(0.5);
  field('Query', 'points').resolve = (_: unknown, { n }: { n: number }) =>
    Array.from({ length: n }, (_, iteration) => ({ iteration, value: 1 }));
  // Nested, as an event's data is: numbers in objects in arrays, and a string.
  field('Query', 'blob').resolve = (_: unknown, a: { numbers: number; text: number }) => ({
    groups: [{ steps: Array.from({ length: a.numbers }, (_, k) => ({ reward: k })) }],
    note: 'x'.repeat(a.text),
  });
  // A promise, as a text looked up by a loader is.
  field('Query', 'text').resolve = async (_: unknown, { length }: { length: number }) =>
    'x'.repeat(length);
  field('Query', 'texts').resolve = (_: unknown, a: { n: number; length: number }) =>
    new Array<string>(a.n).fill('y'.repeat(a.length));
  field('Mutation', 'make').resolve = (_: unknown, { n }: { n: number }) => objs(n);
  const ticks = field('Subscription', 'ticks');
  ticks.subscribe = async function* (_: unknown, { messages, n }: { messages: number; n: number }) {
    for (let m = 0; m < messages; m++) yield { ticks: { objs: objs(n) } };
  };
  return s;
}

const run = (document: string, context: object = {}) =>
  execute({ schema, document: parse(document), contextValue: context }) as Promise<ExecutionResult>;
const code = (r: ExecutionResult) => r.errors?.[0]?.extensions?.code;

test('a request whose lists return more than the limit stops there; one within it is answered', async () => {
  expect(code(await run('{ objs(n: 100) { x } }'))).toBeUndefined();
  const over = await run('{ objs(n: 101) { x } }');
  expect(code(over)).toBe('QUERY_TOO_COSTLY');
  expect(over.errors?.[0]?.message).toMatch(/more than 100 items in its lists/);
  // Aliases add up, whatever each list alone returns.
  expect(code(await run('{ a: objs(n: 60) { x } b: objs(n: 60) { x } }'))).toBe('QUERY_TOO_COSTLY');
});

test('numbers weigh a sixteenth of an object, series points an eighth', async () => {
  expect(code(await run('{ numbers(n: 1600) }'))).toBeUndefined();
  expect(code(await run('{ numbers(n: 1601) }'))).toBe('QUERY_TOO_COSTLY');
  expect(code(await run('{ points(n: 800) { iteration value } }'))).toBeUndefined();
  expect(code(await run('{ points(n: 801) { iteration value } }'))).toBe('QUERY_TOO_COSTLY');
});

test('a JSON value weighs its leaves, a string one plus one per 16 characters', async () => {
  // 1 (the empty note) + 1599 numbers = 1600 scalars, the limit of 100 items.
  expect(code(await run('{ blob(numbers: 1599, text: 0) }'))).toBeUndefined();
  expect(code(await run('{ blob(numbers: 1600, text: 0) }'))).toBe('QUERY_TOO_COSTLY');
  expect(code(await run(`{ blob(numbers: 0, text: ${1599 * 16}) }`))).toBeUndefined();
  expect(code(await run(`{ blob(numbers: 0, text: ${1600 * 16}) }`))).toBe('QUERY_TOO_COSTLY');
});

test('a string weighs one number per 16 characters, alone or in a list (where it is also an item)', async () => {
  expect(code(await run(`{ text(length: ${1600 * 16}) }`))).toBeUndefined();
  expect(code(await run(`{ text(length: ${1601 * 16}) }`))).toBe('QUERY_TOO_COSTLY');
  // Long texts add up across fields; short ones (ids, names) weigh nothing.
  const half = `text(length: ${800 * 16})`;
  expect(code(await run(`{ a: ${half} b: ${half} c: text(length: 15) }`))).toBeUndefined();
  expect(code(await run(`{ a: ${half} b: ${half} c: text(length: 16) }`))).toBe('QUERY_TOO_COSTLY');
  // 100 × (1 + 15) = 1600 scalars; with 256 characters each, 100 × 17.
  expect(code(await run('{ texts(n: 100, length: 255) }'))).toBeUndefined();
  expect(code(await run('{ texts(n: 100, length: 256) }'))).toBe('QUERY_TOO_COSTLY');
  const over = await run(`{ text(length: ${1601 * 16}) }`);
  expect(over.errors?.[0]?.message).toMatch(
    /more than 100 items in its lists, JSON values and strings \(16 numbers or 256 characters count as one\)/,
  );
});

test('each request has its own tally', async () => {
  for (let i = 0; i < 5; i++) expect(code(await run('{ objs(n: 90) { x } }'))).toBeUndefined();
});

test('a mutation is never stopped after it ran', async () => {
  const made = await run('mutation { a: make(n: 80) { x } b: make(n: 80) { x } }');
  expect(made.errors).toBeUndefined();
  expect((made.data as { a: unknown[]; b: unknown[] }).b).toHaveLength(80);
});

test('a subscription counts each message alone, though its context lasts for all of them', async () => {
  const stream = await subscribe({
    schema,
    document: parse('subscription { ticks(messages: 5, n: 90) { objs { x } } }'),
    contextValue: {},
  });
  const messages: ExecutionResult[] = [];
  for await (const m of stream as AsyncIterable<ExecutionResult>) messages.push(m);
  expect(messages).toHaveLength(5);
  expect(messages.map(code)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  const over = await subscribe({
    schema,
    document: parse('subscription { ticks(messages: 1, n: 101) { objs { x } } }'),
    contextValue: {},
  });
  for await (const m of over as AsyncIterable<ExecutionResult>)
    expect(code(m)).toBe('QUERY_TOO_COSTLY');
});
