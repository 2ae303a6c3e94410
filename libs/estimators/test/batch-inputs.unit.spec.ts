import {
  EstimatorInputError,
  ALL_BATCH_INPUTS,
  columnarBatchFromJson,
  estimate,
  listMethods,
  methodInputs,
  withInputs,
} from '../src';
import { syntheticBatchJson } from './support/synthetic-rollouts';

// A reader may fetch only what a method declares (MethodDefinition.inputs): that is safe only if
// the method, given a batch with everything else left empty, answers exactly as on the whole batch.
const batch = columnarBatchFromJson(
  syntheticBatchJson({ groups: 6, groupSize: 8, maxSteps: 12, statesPerGroup: 5 }, 31),
);

/** Parameters that change what a method reads, and a few that do not. */
const VARIANTS: Record<string, Record<string, unknown>[]> = {
  gigpo: [{}, { similarityThreshold: 0.9 }, { normalize: 'mean', episodeStats: 'steps' }],
  gagpo: [{}, { bootstrapTruncated: true }, { bootstrapTruncated: true, normalize: 'none' }],
  'ppo-gae': [{}, { bootstrapTruncated: true }],
  gaca: [{}, { debiased: true }],
  bipace: [{}, { estimator: 'diff_peer' }],
};

const cases = listMethods().flatMap((m) =>
  (VARIANTS[m.name] ?? [{}]).map((params) => [m.name, params] as const),
);

test('the synthetic batch has every input a method may read, truncated ends included', () => {
  expect(batch.firstMissing).toEqual({ nll: -1, value: -1, embedding: -1 });
  expect(batch.stateTexts.length).toBeGreaterThan(0);
  expect(batch.bootstrapStateId.some((s) => s >= 0)).toBe(true);
  expect(batch.bootstrapValue.some((v) => !Number.isNaN(v))).toBe(true);
});

test.each(cases)('%s %j answers the same on only the inputs it declares', (method, params) => {
  const inputs = methodInputs(method, params);
  expect(estimate(withInputs(batch, inputs), method, params)).toEqual(
    estimate(batch, method, params),
  );
});

test('withInputs leaves out what is not asked for, and keeps everything when all is asked', () => {
  expect(withInputs(batch, new Set(ALL_BATCH_INPUTS))).toEqual(batch);
  const none = withInputs(batch, new Set());
  expect(none.stateTexts).toEqual([]);
  expect(Array.from(none.stateId).every((s) => s === 0)).toBe(true);
  expect(none.firstMissing).toEqual({ nll: 0, value: 0, embedding: 0 });
  expect(none.embeddingDim).toBe(0);
  expect(Array.from(none.bootstrapStateId).every((s) => s === -1)).toBe(true);
  // What every method reads regardless stays.
  expect(none.reward).toBe(batch.reward);
  expect(none.outcome).toBe(batch.outcome);
});

test('a declaration that leaves out what the method reads is caught', () => {
  // gigpo without its state ids groups every step of a task together: different advantages, or
  // none at all (non-finite ones are refused).
  let without: number[] | string;
  try {
    without = Array.from(estimate(withInputs(batch, new Set()), 'gigpo').advantages);
  } catch (e) {
    if (!(e instanceof EstimatorInputError && e.code === 'NON_FINITE_RESULT')) throw e;
    without = e.message;
  }
  expect(without).not.toEqual(Array.from(estimate(batch, 'gigpo').advantages));
  expect(methodInputs('gigpo', { similarityThreshold: 0.9 })).toEqual(
    new Set(['state', 'stateText']),
  );
});
