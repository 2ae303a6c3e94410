import * as tf from '@tensorflow/tfjs';
import type { PolicyConfig, TextPolicy } from './text-policy';

export const CHECKPOINT_FORMAT = 'creditlab-text-policy/v1';

interface Header {
  format: typeof CHECKPOINT_FORMAT;
  policy: PolicyConfig;
  /** Iterations trained: the iteration these weights sample next. */
  iteration: number;
  tensors: { name: string; shape: number[] }[];
}

export interface DecodedCheckpoint {
  policy: PolicyConfig;
  iteration: number;
  tensors: { name: string; shape: number[]; values: Float32Array }[];
}

const POLICY_NAMES = ['E', 'W', 'b', 'U', 'wv'];
const CRITIC_OPTIMIZER = 'criticOptimizer/';

/**
 * The policy's weights and the optimizer's state (Adam's moments and step), so that a fork from this
 * checkpoint continues exactly where the run was. Layout: a little-endian uint32 header length, the
 * JSON header, then every tensor's float32 values in header order.
 */
export async function encodeCheckpoint(
  policy: TextPolicy,
  optimizer: tf.Optimizer,
  iteration: number,
  /** The value head's own optimizer, when the run trains one. */
  criticOptimizer?: tf.Optimizer,
): Promise<Uint8Array> {
  const named = [
    ...policy.variables.map((v, i) => ({
      name: `policy/${POLICY_NAMES[i]}`,
      tensor: v as tf.Tensor,
    })),
    ...(await optimizer.getWeights()).map((w) => ({
      name: `optimizer/${w.name}`,
      tensor: w.tensor,
    })),
    ...(criticOptimizer ? await criticOptimizer.getWeights() : []).map((w) => ({
      name: `${CRITIC_OPTIMIZER}${w.name}`,
      tensor: w.tensor,
    })),
  ];
  const header: Header = {
    format: CHECKPOINT_FORMAT,
    policy: policy.config,
    iteration,
    tensors: named.map((n) => ({ name: n.name, shape: n.tensor.shape })),
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  // converted, not reinterpreted: Adam's step counter is an int32 tensor
  const values = named.map((n) => Float32Array.from(n.tensor.dataSync()));
  const total = 4 + json.length + values.reduce((a, v) => a + v.length * 4, 0);
  const out = Buffer.alloc(total);
  out.writeUInt32LE(json.length, 0);
  json.copy(out, 4);
  let offset = 4 + json.length;
  for (const v of values) {
    Buffer.from(v.buffer, v.byteOffset, v.byteLength).copy(out, offset);
    offset += v.byteLength;
  }
  return out;
}

export function decodeCheckpoint(bytes: Uint8Array): DecodedCheckpoint {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = buf.readUInt32LE(0);
  const header = JSON.parse(buf.subarray(4, 4 + length).toString('utf8')) as Header;
  if (header.format !== CHECKPOINT_FORMAT)
    throw new Error(`checkpoint format ${String(header.format)}, expected ${CHECKPOINT_FORMAT}`);
  let offset = 4 + length;
  const tensors = header.tensors.map((t) => {
    const n = t.shape.reduce((a, b) => a * b, 1);
    // copied: the slice may not be 4-byte aligned within the download
    const values = new Float32Array(
      buf.buffer.slice(buf.byteOffset + offset, buf.byteOffset + offset + 4 * n),
    );
    offset += 4 * n;
    return { ...t, values };
  });
  if (offset !== buf.length)
    throw new Error(`checkpoint has ${buf.length - offset} bytes past its tensors`);
  return { policy: header.policy, iteration: header.iteration, tensors };
}

/** Loads a decoded checkpoint into a policy of the same shape and into the optimizer. */
export async function restoreCheckpoint(
  checkpoint: DecodedCheckpoint,
  policy: TextPolicy,
  optimizer: tf.Optimizer,
  /** Restored when the checkpoint has its state (checkpoints from before the critic was trained do not). */
  criticOptimizer?: tf.Optimizer,
): Promise<void> {
  const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
  policy.variables.forEach((v, i) => {
    const t = byName.get(`policy/${POLICY_NAMES[i]}`);
    if (!t || t.shape.join('x') !== v.shape.join('x'))
      throw new Error(`checkpoint lacks policy/${POLICY_NAMES[i]} of shape ${v.shape.join('×')}`);
    v.assign(tf.tensor(t.values, t.shape));
  });
  await restoreOptimizer(checkpoint, 'optimizer/', optimizer);
  if (criticOptimizer) await restoreOptimizer(checkpoint, CRITIC_OPTIMIZER, criticOptimizer);
}

async function restoreOptimizer(
  checkpoint: DecodedCheckpoint,
  prefix: string,
  optimizer: tf.Optimizer,
): Promise<void> {
  const state = checkpoint.tensors.filter((t) => t.name.startsWith(prefix));
  if (state.length)
    await optimizer.setWeights(
      state.map((t) => ({
        name: t.name.slice(prefix.length),
        tensor: tf.tensor(t.values, t.shape),
      })),
    );
}
