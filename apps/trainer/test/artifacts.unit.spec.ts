import * as tf from '@tensorflow/tfjs';
import { PNG } from 'pngjs';
import { selectBackend } from '../src/policy/backend';
import {
  CHECKPOINT_FORMAT,
  decodeCheckpoint,
  encodeCheckpoint,
  restoreCheckpoint,
} from '../src/policy/checkpoint';
import { TextPolicy } from '../src/policy/text-policy';
import { lineChartPng } from '../src/png-plot';

beforeAll(async () => {
  await selectBackend();
});

test('a checkpoint restores the policy and the optimizer state exactly into a fresh policy', async () => {
  const policy = new TextPolicy({ vocab: 64, hidden: 8, seed: 3 });
  const optimizer = tf.train.adam(0.01);
  // one step so that Adam has moments to save
  optimizer.minimize(() => tf.sum(tf.square(policy.E)) as tf.Scalar, false, policy.variables);
  const bytes = await encodeCheckpoint(policy, optimizer, 7);
  const decoded = decodeCheckpoint(bytes);
  expect(decoded.iteration).toBe(7);
  expect(decoded.policy).toEqual(policy.config);
  const fresh = new TextPolicy({ vocab: 64, hidden: 8, seed: 99 });
  const freshOptimizer = tf.train.adam(0.01);
  await restoreCheckpoint(decoded, fresh, freshOptimizer);
  fresh.variables.forEach((v, i) =>
    expect(Array.from(v.dataSync())).toEqual(Array.from(policy.variables[i]!.dataSync())),
  );
  // the optimizer's moments and step came along too (its tensor names follow the new variables' names)
  const again = decodeCheckpoint(await encodeCheckpoint(fresh, freshOptimizer, 7));
  expect(again.tensors.map((t) => [t.shape, Array.from(t.values)])).toEqual(
    decoded.tensors.map((t) => [t.shape, Array.from(t.values)]),
  );
  expect(decoded.tensors.filter((t) => t.name.startsWith('optimizer/')).length).toBe(1 + 2 * 5);
  expect(() => decodeCheckpoint(Buffer.concat([Buffer.from(bytes), Buffer.from([0])]))).toThrow(
    /past its tensors/,
  );
  expect(CHECKPOINT_FORMAT).toBe('creditlab-text-policy/v1');
});

test('the learning-curve chart is a PNG with the series drawn in their colours and labelled axes', () => {
  const png = PNG.sync.read(
    lineChartPng(
      [
        {
          label: 'a',
          points: [
            [0, 0],
            [30, 1],
          ],
        },
      ],
      30,
      400,
      300,
    ),
  );
  expect([png.width, png.height]).toEqual([400, 300]);
  const pixels = (rgb: [number, number, number]) => {
    let n = 0;
    for (let i = 0; i < png.data.length; i += 4)
      if (png.data[i] === rgb[0] && png.data[i + 1] === rgb[1] && png.data[i + 2] === rgb[2]) n++;
    return n;
  };
  expect(pixels([31, 119, 180])).toBeGreaterThan(300); // the series' line and swatch
  expect(pixels([90, 90, 90])).toBeGreaterThan(100); // the axis labels
});
