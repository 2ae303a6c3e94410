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
import { lineChartOption, methodColour } from '@creditlab/charts';
import { chartImages } from '../src/chart-image';

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

test('the learning-curve chart: SVG and PNG, a legend naming the methods in their colours, labelled axes', () => {
  const curve = (method: string, end: number) => ({
    name: method,
    method,
    points: [0, 10, 20, 30].map((x) => [x, (end * x) / 30] as [number, number]),
  });
  const { svg, png } = chartImages(
    lineChartOption({
      xName: 'iteration',
      yName: 'held-out success',
      percent: true,
      static: true,
      series: [curve('gigpo', 0.9), curve('grpo', 0.5)],
    }),
    400,
    300,
  );
  // The legend names each method; the axes say what they measure.
  for (const text of ['gigpo', 'grpo', 'iteration', 'held-out success', '100 %'])
    expect(svg).toContain(`>${text}<`);
  const image = PNG.sync.read(png);
  expect([image.width, image.height]).toEqual([400, 300]);
  const near = (hex: string) => {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    let n = 0;
    for (let i = 0; i < image.data.length; i += 4)
      if (
        Math.abs(image.data[i]! - r!) +
          Math.abs(image.data[i + 1]! - g!) +
          Math.abs(image.data[i + 2]! - b!) <
        30
      )
        n++;
    return n;
  };
  // Each method's line and legend swatch, in the colour the web app gives it.
  expect(near(methodColour('gigpo'))).toBeGreaterThan(200);
  expect(near(methodColour('grpo'))).toBeGreaterThan(200);
  // Text was drawn (a font was found): dark grey label pixels.
  expect(near('#6e7079') + near('#333333')).toBeGreaterThan(100);
});
