import {
  base64ListMark,
  jsonObjectWithBase64,
  jsonWithBase64Lists,
} from '../src/rollouts/json-with-base64-lists';

type Lists = (string | null)[][];

/** What the writer must produce, byte for byte (a digest's input): the marks replaced, then JSON. */
function reference(value: unknown, lists: Lists): Buffer {
  const unmarked = JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'string' && v.startsWith('\u0000') ? lists[Number(v.slice(1))] : v,
  );
  return Buffer.from(unmarked, 'utf8');
}

test.each<[string, unknown, Lists]>([
  ['no lists', { v: 3, n: [1, 2] }, []],
  ['a list alone', base64ListMark(0), [['AACAPw==', null]]],
  [
    'an empty list and empty strings',
    { a: base64ListMark(0), b: base64ListMark(1) },
    [[], ['', null, '']],
  ],
  [
    'text beyond ASCII, escapes and nesting around the lists',
    {
      texts: ['é «x»', '"q"\\\n\u0001', '😀', '\\u0000'],
      slices: [
        { n: 2, embedding: base64ListMark(0), extra: ['{"é":1}', null] },
        { n: 0, tokenLogprobs: base64ListMark(1), embedding: base64ListMark(2) },
      ],
      after: [-1.5e-7, true, null],
    },
    [['AAAAvw==', null], [], [null, 'AACAPgAAgL8=', 'QQ']],
  ],
])('writes what JSON.stringify writes: %s', (_what, value, lists) => {
  expect(jsonWithBase64Lists(value, lists)).toEqual(reference(value, lists));
});

test('writes what JSON.stringify writes for many vectors (random)', () => {
  let seed = 11;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const vector = () =>
    random(5) === 0
      ? null
      : Buffer.from(
          Float32Array.from({ length: random(70) }, () => random(1e6) / 7).buffer,
        ).toString('base64');
  for (let k = 0; k < 200; k++) {
    const lists: Lists = [];
    const slices = Array.from({ length: 1 + random(4) }, () => {
      const slice: Record<string, unknown> = { n: random(9), texts: [`t${random(100)}é`] };
      for (const name of ['tokenLogprobs', 'embedding'])
        if (random(3) > 0) {
          slice[name] = base64ListMark(lists.length);
          lists.push(Array.from({ length: random(20) }, vector));
        }
      return slice;
    });
    const value = { v: 2, slices };
    expect(jsonWithBase64Lists(value, lists)).toEqual(reference(value, lists));
  }
});

test('refuses marks that do not match the lists', () => {
  expect(() => jsonWithBase64Lists({ a: base64ListMark(0) }, [])).toThrow(/marks 1 lists, not 0/);
  expect(() =>
    jsonWithBase64Lists({ a: base64ListMark(1), b: base64ListMark(0) }, [[], []]),
  ).toThrow(/marks 2 lists/);
});

const BASE64_FIELDS = new Set(['reward', 'embedding', 'tokenLogprobs']);

test.each<[string, Record<string, unknown>]>([
  ['no base64 fields', { v: 3, n: [1, 2], texts: ['é «x»', '"q"\\\n\u0001', '😀'] }],
  ['only base64 fields', { reward: 'AAAAAAAA8D8=', embedding: ['AACAPw==', null] }],
  ['empty text and lists', { reward: '', embedding: [], tokenLogprobs: [null, ''] }],
  [
    'base64 fields between others, an undefined field and a non-base64 value under a base64 name',
    {
      v: 3,
      reward: 'AAAAAAAA8D8=',
      skipped: undefined,
      texts: ['a', 'ü'],
      embedding: [null, 'AACAPgAAgL8='],
      tokenLogprobs: { not: 'base64' },
      'key "quoted"': -1.5e-7,
    },
  ],
  ['nothing', {}],
])('an object with base64 fields: what JSON.stringify writes: %s', (_what, fields) => {
  expect(jsonObjectWithBase64(fields, BASE64_FIELDS)).toEqual(
    Buffer.from(JSON.stringify(fields), 'utf8'),
  );
});
