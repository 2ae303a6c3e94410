import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFORMANCE_DIR } from '../../../test/support/conformance-dir';
import {
  columnarBatchFromJson,
  estimate,
  toAdvantagesDocument,
  type AdvantagesDocument,
} from '../src';
import { expectClose } from './support/tolerance';

/**
 * Conformance: every expected result in test/fixtures/conformance (verl-agent's reference
 * outputs and those of an independent implementation of docs/estimators.md) is reproduced within
 * |got − want| ≤ 1e-4·(1 + |want|), read straight from that folder.
 */
interface Fixture {
  description: string;
  batch: unknown;
  expected: AdvantagesDocument[];
}

const TOL = 1e-4;
const fixturesDir = CONFORMANCE_DIR;
const files = ['verl-agent', 'spec'].flatMap((dir) =>
  readdirSync(path.join(fixturesDir, dir))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => path.join(dir, f)),
);

/** Diagnostics that mean the same here and in the spec fixtures are compared too. */
const COMPARED_DIAGNOSTICS = [
  'value',
  'delta',
  'advRaw',
  'returnTarget',
  'stepGroupSize',
  'stepGroupId',
  'advEpisode',
  'advStep',
  'criticality',
  'lambda',
  'nll',
  'gate',
  'eta',
  'clusterId',
  'clusterDist',
  'q',
  'actionPeers',
];

test('the fixture folders are there and hold fixtures', () => {
  expect(files.filter((f) => f.startsWith('verl-agent')).length).toBeGreaterThanOrEqual(10);
  expect(files.filter((f) => f.startsWith('spec')).length).toBeGreaterThanOrEqual(8);
});

describe.each(files)('%s', (file) => {
  const fixture = JSON.parse(readFileSync(path.join(fixturesDir, file), 'utf8')) as Fixture;
  const batch = columnarBatchFromJson(fixture.batch);
  const cases = fixture.expected.map(
    (e, n) => [`#${n} ${e.method} ${JSON.stringify(e.params)}`, e] as const,
  );

  test.each(cases)('%s', (_label, want) => {
    const got = toAdvantagesDocument(batch, estimate(batch, want.method, want.params));
    // Every parameter the fixture names is echoed with its value; spec fixtures list them all.
    expect(got.params).toMatchObject(want.params);
    if (file.startsWith('spec')) expect(Object.keys(got.params)).toEqual(Object.keys(want.params));
    expect(got.groups.map((g) => g.id)).toEqual(want.groups.map((g) => g.id));
    want.groups.forEach((wg, gi) => {
      const gg = got.groups[gi]!;
      expect(gg.trajectories.map((t) => t.id)).toEqual(wg.trajectories.map((t) => t.id));
      wg.trajectories.forEach((wt, ti) => {
        const gt = gg.trajectories[ti]!;
        expectClose(gt.advantages, wt.advantages, TOL, `${wt.id} advantages`);
        for (const name of COMPARED_DIAGNOSTICS) {
          const w = wt.diagnostics?.[name];
          if (!w) continue;
          const g = gt.diagnostics?.[name];
          expect(g).toBeDefined();
          expect(g!.map((x) => x === null)).toEqual(w.map((x) => x === null));
          expectClose(
            g!.map((x) => Number(x ?? 0)),
            w.map((x) => Number(x ?? 0)),
            TOL,
            `${wt.id} diagnostics.${name}`,
          );
        }
      });
    });
  });
});
