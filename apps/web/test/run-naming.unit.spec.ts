import { expect, test } from '@jest/globals';
import type { MetricCurves } from '../src/api/run-api';
import type { Estimator } from '../src/api/types';
import { givenParams, ownMethod } from '../src/components/own-method';
import { seriesName } from '../src/pages/run/series-name';

const curve = (runId: string, runName: string): MetricCurves => ({
  runId,
  runName,
  series: new Map(),
});

test('a curve names its run once with its method, and by id where two runs share a name', () => {
  const a = curve('aaaaaaaa-1', 'gaca household-tiny seed 1');
  const b = curve('bbbbbbbb-2', 'gaca household-tiny seed 1');
  const c = curve('cccccccc-3', 'baseline');
  expect(seriesName(c, 'grpo', [a, b, c])).toBe('baseline (grpo)');
  expect(seriesName(a, 'gaca', [a, c])).toBe('gaca household-tiny seed 1');
  // Same name: one legend entry would show and hide both lines.
  expect([a, b].map((x) => seriesName(x, 'gaca', [a, b, c]))).toEqual([
    'gaca household-tiny seed 1 · aaaaaaaa',
    'gaca household-tiny seed 1 · bbbbbbbb',
  ]);
});

const GIGPO = {
  name: 'gigpo',
  params: [
    { name: 'gamma', type: 'number', default: 0.95, allowed: '', description: '' },
    { name: 'stepWeight', type: 'number', default: 1, allowed: '', description: '' },
  ],
} as unknown as Estimator;

test("the run's own method carries the parameters it trained with that its estimator takes", () => {
  expect(ownMethod({ method: 'gigpo', params: { gamma: 0.5, lr: 1e-5 } }, [GIGPO])).toEqual({
    name: 'gigpo',
    params: { gamma: 0.5 },
  });
  expect(ownMethod({ method: 'gigpo', params: {} }, [GIGPO])).toEqual({ name: 'gigpo' });
  expect(ownMethod({ method: 'gigpo', params: { gamma: 0.5 } }, undefined)).toEqual({
    name: 'gigpo',
  });
});

test('a set is named by the parameters that differ from the defaults', () => {
  expect(givenParams('gigpo', { gamma: 0.95, stepWeight: 1 }, [GIGPO])).toEqual({});
  expect(givenParams('gigpo', { gamma: 0.5, stepWeight: 1 }, [GIGPO])).toEqual({ gamma: 0.5 });
  expect(givenParams('other', { x: 1 }, [GIGPO])).toEqual({ x: 1 });
});
