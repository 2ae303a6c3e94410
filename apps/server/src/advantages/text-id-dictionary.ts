/**
 * Numbers a task group's texts in order of first appearance, keyed by their stored 64-bit text id
 * (two int32 halves, as binary COPY gives them) instead of by the text: the id is derived from the
 * text (texts.id), so equal ids are equal texts, and the texts themselves need not be read unless
 * a method looks at them. Open addressing with a generation stamp per slot: starting the next
 * group costs nothing, whatever the table's size.
 */
export class TextIdDictionary {
  private bits = 0;
  private hi = new Int32Array(0);
  private lo = new Int32Array(0);
  private local = new Int32Array(0);
  private stamp = new Int32Array(0);
  private generation = 0;
  private count = 0;
  /** The ids of every text numbered so far, over all groups (global id order): for looking up texts, and packing. */
  readonly idsHi: number[] = [];
  readonly idsLo: number[] = [];

  /** Starts a group of at most `maxTexts` distinct texts; their local ids start at 0 again. */
  beginGroup(maxTexts: number): void {
    if (2 * maxTexts > this.stamp.length) this.allocate(2 * maxTexts);
    this.generation++;
    this.count = 0;
  }

  /** The local id of (hi, lo) in the current group, numbering it if it is new. */
  intern(hi: number, lo: number): number {
    const slot = this.find(hi, lo);
    if (this.stamp[slot] === this.generation) return this.local[slot] as number;
    this.stamp[slot] = this.generation;
    this.hi[slot] = hi;
    this.lo[slot] = lo;
    this.local[slot] = this.count;
    this.idsHi.push(hi);
    this.idsLo.push(lo);
    return this.count++;
  }

  /** The local id of (hi, lo) in the current group, or −1 if the group has no such text. */
  lookup(hi: number, lo: number): number {
    const slot = this.find(hi, lo);
    return this.stamp[slot] === this.generation ? (this.local[slot] as number) : -1;
  }

  /** Distinct texts numbered in the current group. */
  get size(): number {
    return this.count;
  }

  private find(hi: number, lo: number): number {
    const mask = this.stamp.length - 1;
    // The ids are SHA-256 prefixes: their low bits are already uniform.
    let slot = (lo ^ Math.imul(hi, 0x9e3779b1)) & mask;
    while (this.stamp[slot] === this.generation) {
      if (this.lo[slot] === lo && this.hi[slot] === hi) return slot;
      slot = (slot + 1) & mask;
    }
    return slot;
  }

  private allocate(atLeast: number): void {
    while (1 << this.bits < Math.max(16, atLeast)) this.bits++;
    const size = 1 << this.bits;
    this.hi = new Int32Array(size);
    this.lo = new Int32Array(size);
    this.local = new Int32Array(size);
    this.stamp = new Int32Array(size);
    this.generation = 0;
  }
}

/** The decimal text of a signed 64-bit id given as two int32 halves (texts.id as PostgreSQL prints it). */
export function idText(hi: number, lo: number): string {
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo >>> 0)).toString();
}
