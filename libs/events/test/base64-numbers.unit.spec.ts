import { decodeBase64, firstNonFinite, float32Base64 } from '../src';

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
  ])('refuses %s, which Node’s decoder alone would read', (_what, text) => {
    expect(decodeBase64(text)).toBeUndefined();
  });

  test('passes exactly the texts the standard alphabet pattern passes (random texts)', () => {
    // Texts made mostly of base64, with a few characters it does not allow and '=' anywhere.
    const alphabet = 'ABCZabcz019+/=-_ \né';
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let accepted = 0;
    for (let k = 0; k < 20_000; k++) {
      let text = '';
      const length = random(13);
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
