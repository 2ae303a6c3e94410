import {
  Base64Arena,
  decodeBase64,
  firstNonFinite,
  float32Base64,
  float32View,
  parseStepColumns,
} from '../src';

/** The rule decodeBase64 keeps (its fast path must not change which texts pass). */
const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

describe('decodeBase64', () => {
  test('reads what an encoder writes, bytes exact', () => {
    const vector = new Float32Array([0.25, -1e-30, 3.4e38, 0]);
    const bytes = decodeBase64(float32Base64(vector));
    expect(bytes && new Float32Array(new Uint8Array(bytes).buffer)).toEqual(vector);
    expect(decodeBase64('')).toEqual(Buffer.alloc(0));
  });

  test('takes standard base64 written otherwise (no padding, other trailing bits)', () => {
    expect(decodeBase64('QQ')).toEqual(Buffer.from('A'));
    expect(decodeBase64('QR==')).toEqual(Buffer.from('A'));
  });

  test.each([
    ['the URL-safe alphabet', 'ab-_'],
    ['whitespace', 'QUJD RA=='],
    ['a line break', 'QUJD\nRA=='],
    ['padding inside', 'QQ==QQ=='],
    ['three padding characters', 'QQ==='],
    ['a character outside ASCII', 'QUJDRA=é'],
    // Node's decoder reads a character above 0xFF by its low byte: these would pass a byte count.
    ['a character whose low byte is in the alphabet', 'AAA\u0141'],
    ['a lone surrogate whose low byte is in the alphabet', 'AAA\udc41'],
    ['a character whose low byte is the URL-safe -', 'AAA\u012d'],
  ])('refuses %s, which Node’s decoder alone would read', (_what, text) => {
    expect(decodeBase64(text)).toBeUndefined();
  });

  test('passes exactly the texts the standard alphabet pattern passes (random texts)', () => {
    // Texts made mostly of base64, with a few characters it does not allow and '=' anywhere.
    const alphabet = 'ABCZabcz019+/=-_ \né\u0141\u012d\ud841';
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let accepted = 0;
    for (let k = 0; k < 20_000; k++) {
      let text = '';
      const length = random(25);
      for (let i = 0; i < length; i++)
        text += alphabet[random(4) === 0 ? random(alphabet.length) : random(11)];
      const bytes = decodeBase64(text);
      expect({ text, passes: bytes !== undefined }).toEqual({
        text,
        passes: STANDARD_BASE64.test(text),
      });
      if (bytes) {
        accepted++;
        expect(bytes).toEqual(Buffer.from(text, 'base64'));
      }
    }
    // Both outcomes are well represented, or the comparison above would prove little.
    expect(accepted).toBeGreaterThan(2_000);
    expect(accepted).toBeLessThan(18_000);
  });
});

describe('Base64Arena', () => {
  test('passes the texts decodeBase64 passes, with the same bytes, one after another in one buffer', () => {
    const texts = [
      'QQ',
      'ab-_',
      'QUJDRA==',
      'QR==',
      '',
      'QUJD RA==',
      'AAAAAAAAgD8=',
      7,
      null,
      'QQ==QQ==',
      'AAA\u0141',
    ];
    const arena = new Base64Arena(texts);
    const buffers = new Set<ArrayBufferLike>();
    for (const text of texts) {
      if (typeof text !== 'string') continue;
      const bytes = arena.decode(text);
      expect({ text, bytes }).toEqual({ text, bytes: decodeBase64(text) });
      if (bytes) buffers.add(bytes.buffer);
    }
    expect(buffers.size).toBe(1);
  });

  test("a column's vectors share one buffer, aligned, with their values", () => {
    const vectors = [
      new Float32Array([0.5, -2, 3.4e38]),
      new Float32Array([1e-30]),
      new Float32Array([7, 8, 9, 10, 11]),
    ];
    const columns = parseStepColumns(
      {
        texts: ['s', 'a'],
        state: [0, 0, 0, 0],
        action: [1, 1, 1, 1],
        reward: float64Text([0, 0, 0, 1]),
        embedding: [
          float32Base64(vectors[0]!),
          null,
          float32Base64(vectors[1]!),
          float32Base64(vectors[2]!),
        ],
      },
      4,
    );
    const embedding = columns.embedding!;
    expect(embedding).toEqual([vectors[0], null, vectors[1], vectors[2]]);
    const [first, , second, third] = embedding as Float32Array[];
    expect(second!.buffer).toBe(first!.buffer);
    expect(third!.buffer).toBe(first!.buffer);
    expect([first!.byteOffset, second!.byteOffset, third!.byteOffset]).toEqual([0, 12, 16]);
  });
});

describe('float32View', () => {
  test('views aligned bytes in place and copies unaligned ones', () => {
    const bytes = Buffer.from(new Float32Array([1, 2, 3]).buffer);
    const aligned = float32View(bytes.subarray(4));
    expect(aligned).toEqual(new Float32Array([2, 3]));
    expect(aligned.buffer).toBe(bytes.buffer);
    const unaligned = Buffer.concat([Buffer.alloc(1), bytes]).subarray(1);
    const copied = float32View(unaligned);
    expect(copied).toEqual(new Float32Array([1, 2, 3]));
    expect(copied.buffer).not.toBe(unaligned.buffer);
  });
});

function float64Text(values: number[]): string {
  return Buffer.from(new Float64Array(values).buffer).toString('base64');
}

describe('firstNonFinite', () => {
  test('finds the first NaN or infinity, in either width', () => {
    expect(firstNonFinite(new Float32Array([0, -1, 3.4e38]))).toBe(-1);
    expect(firstNonFinite(new Float32Array(0))).toBe(-1);
    expect(firstNonFinite(new Float32Array([0, 1, NaN, Infinity]))).toBe(2);
    expect(firstNonFinite(new Float64Array([1, -Infinity, NaN]))).toBe(1);
    // A float64 too large for float32 becomes infinite when stored as one.
    expect(firstNonFinite(new Float32Array([1, 2, 3, 1e39]))).toBe(3);
  });
});
