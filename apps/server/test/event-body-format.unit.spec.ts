import { validateEvent, type ValidEvent } from '@creditlab/events';
import { bodyOf, eventDigest, logBodiesOf } from '../src/rollouts/event-digest';

/**
 * The stored body of a step-bearing event, byte for byte. The body is an input of the event digest,
 * and a retry of a stored event is recognised by it: a body written differently for the same steps
 * would turn retries of events already in the log into 409s. The expected bodies are written out by
 * hand from the format (docs/architecture.md, version 2; numbers as numpy's `<f8`, vectors as
 * `<f4`), not produced by the encoder.
 */

function validated(value: unknown): ValidEvent {
  const result = validateEvent(value, 'server');
  if (!result.ok) throw new Error(`${result.issue.path}: ${result.issue.message}`);
  return result.event;
}

/** Two groups; a trajectory with every optional field on one step or the other, an empty one. */
const rollouts = validated({
  id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a20',
  type: 'rollouts.appended',
  data: {
    iteration: 4,
    groups: [
      {
        id: 'g0',
        trajectories: [
          {
            id: 't0',
            outcome: 'success',
            steps: [
              {
                state: 's0',
                action: 'a0',
                reward: 1,
                nll: 0.5,
                embedding: [0.25, -1],
                nextState: 's2',
              },
              // A vector sent in base64 is stored as the same bytes as one sent as numbers.
              {
                note: { b: 2, a: 1 },
                state: 's1',
                action: 'a0',
                reward: -0,
                value: 0.125,
                tokenLogprobs: 'AAAAvw==',
              },
            ],
          },
          { id: 't1', steps: [] },
        ],
      },
      {
        id: 'g1',
        trajectories: [
          {
            id: 't2',
            steps: [{ state: 's1', action: 'a1', reward: 0.1, nextValue: 2, tokenLogprobs: [] }],
          },
        ],
      },
    ],
  },
});

const steps = validated({
  id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a21',
  type: 'steps.appended',
  data: {
    iteration: 0,
    groupId: 'g',
    trajectoryId: 't',
    firstStepIndex: 3,
    steps: [
      { state: 'here', action: 'go', reward: 0.1 },
      { state: 'there', action: 'go', reward: 2, nextState: 'here' },
    ],
  },
});

test('a rollouts.appended body: texts once across slices (states, actions, next states), columns in a fixed order', () => {
  const expected = {
    v: 2,
    texts: ['s0', 's1', 'a0', 's2', 'a1'],
    slices: [
      {
        n: 2,
        state: [0, 1],
        action: [2, 2],
        reward: 'AAAAAAAA8D8AAAAAAAAAgA==', // 1, -0
        nll: 'AAAAAAAA4D8AAAAAAAD4fw==', // 0.5, NaN
        value: 'AAAAAAAA+H8AAAAAAADAPw==', // NaN, 0.125
        nextState: [3, -1],
        tokenLogprobs: [null, 'AAAAvw=='], // -0.5
        embedding: ['AACAPgAAgL8=', null], // 0.25, -1
        extra: [null, '{"note":{"a":1,"b":2}}'], // keys sorted
      },
      { n: 0, state: [], action: [], reward: '' },
      {
        n: 1,
        state: [1],
        action: [4],
        reward: 'mpmZmZmZuT8=', // 0.1
        nextValue: 'AAAAAAAAAEA=', // 2
        tokenLogprobs: [''],
      },
    ],
  };
  expect(bodyOf(rollouts)?.toString('utf8')).toBe(JSON.stringify(expected));
});

test('a steps.appended body: one slice', () => {
  const expected = {
    v: 2,
    texts: ['here', 'there', 'go'],
    slices: [
      {
        n: 2,
        state: [0, 1],
        action: [2, 2],
        reward: 'mpmZmZmZuT8AAAAAAAAAQA==', // 0.1, 2
        nextState: [-1, 0],
      },
    ],
  };
  expect(bodyOf(steps)?.toString('utf8')).toBe(JSON.stringify(expected));
});

test('the digests of these events are the ones the log holds for them', () => {
  // Computed once when this test was written; a change means stored events no longer match.
  expect(eventDigest(rollouts, bodyOf(rollouts)).toString('hex')).toBe(
    '5d324d3dfc604fa1e6a7e6be065b95ab78e495c644861ad75dde445c03a83e9a',
  );
  expect(eventDigest(steps, bodyOf(steps)).toString('hex')).toBe(
    '2641c487ef2c53e4a3458ef15b7b1fd6c5062f27acb5a18f8011664a9b38651d',
  );
});

/** Columnar, with texts beyond ASCII and each kind of vector entry (one, none, empty). */
const columnar = validated({
  id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a22',
  type: 'rollouts.appended',
  data: {
    iteration: 1,
    groups: [{ id: 'g', trajectories: [{ id: 't', outcome: 'failure', stepCount: 3 }] }],
    columns: {
      texts: ['état «0»', 'go', '"quoted"\n'],
      state: [0, 2, 0],
      action: [1, 1, 1],
      reward: 'AAAAAAAA8D8AAAAAAAAAgJqZmZmZmbk/', // 1, -0, 0.1
      nll: 'AAAAAAAA4D8AAAAAAAD4fwAAAAAAAPh/', // 0.5, NaN, NaN
      nextState: [2, -1, -1],
      tokenLogprobs: ['AAAAvw==', null, ''], // -0.5
      embedding: [null, 'AACAPgAAgL8=', 'AACAPw=='], // 0.25, -1; 1
    },
  },
});

test('a columnar rollouts.appended body: the columns as sent, in a fixed order, vectors last', () => {
  const expected = {
    v: 3,
    n: [3],
    texts: ['état «0»', 'go', '"quoted"\n'],
    state: [0, 2, 0],
    action: [1, 1, 1],
    reward: 'AAAAAAAA8D8AAAAAAAAAgJqZmZmZmbk/',
    nll: 'AAAAAAAA4D8AAAAAAAD4fwAAAAAAAPh/',
    nextState: [2, -1, -1],
    tokenLogprobs: ['AAAAvw==', null, ''],
    embedding: [null, 'AACAPgAAgL8=', 'AACAPw=='],
  };
  expect(bodyOf(columnar)).toEqual(Buffer.from(JSON.stringify(expected), 'utf8'));
  // Computed when the body was written by JSON.stringify, before its vectors were copied in as sent.
  expect(eventDigest(columnar, bodyOf(columnar)).toString('hex')).toBe(
    '01a04412b91178caf9328090377ad5e0bd15f1b4da60c278b625862fe781e70b',
  );
});

test('a columnar body whose every step has an embedding of one size (version 4): the JSON without them, a newline, their bytes', () => {
  const event = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a23',
    type: 'rollouts.appended',
    data: {
      iteration: 2,
      groups: [{ id: 'g', trajectories: [{ id: 't', stepCount: 2 }] }],
      columns: {
        texts: ['s', 'a'],
        state: [0, 0],
        action: [1, 1],
        reward: 'AAAAAAAA8D8AAAAAAAAAAA==', // 1, 0
        embedding: ['AACAPg==', 'AACAvw=='], // 0.25; -1
      },
    },
  });
  const json =
    '{"v":4,"n":[2],"texts":["s","a"],"state":[0,0],"action":[1,1],"reward":"AAAAAAAA8D8AAAAAAAAAAA=="}';
  const vectors = Buffer.from([0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x80, 0xbf]); // <f4 0.25, -1
  expect(logBodiesOf(event).stored).toEqual(Buffer.concat([Buffer.from(`${json}\n`), vectors]));
  // Its digest is that of the version 3 body, the columns as sent.
  expect(bodyOf(event)?.toString()).toBe(
    '{"v":3,"n":[2],"texts":["s","a"],"state":[0,0],"action":[1,1],"reward":"AAAAAAAA8D8AAAAAAAAAAA==","embedding":["AACAPg==","AACAvw=="]}',
  );
});

test('a body of step objects whose every step has an embedding of one size (version 5): slices without them, a newline, their bytes in step order', () => {
  const event = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a24',
    type: 'rollouts.appended',
    data: {
      iteration: 0,
      groups: [
        {
          id: 'g',
          trajectories: [
            { id: 't0', steps: [{ state: 's', action: 'a', reward: 1, embedding: [0.25] }] },
            { id: 't1', steps: [] },
            { id: 't2', steps: [{ state: 's', action: 'a', reward: 0, embedding: 'AACAvw==' }] },
          ],
        },
      ],
    },
  });
  const slice = (reward: string) => ({ n: 1, state: [0], action: [1], reward });
  const json = JSON.stringify({
    v: 5,
    texts: ['s', 'a'],
    slices: [
      slice('AAAAAAAA8D8='), // 1
      { n: 0, state: [], action: [], reward: '' },
      slice('AAAAAAAAAAA='), // 0
    ],
  });
  const vectors = Buffer.from([0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x80, 0xbf]); // <f4 0.25, -1
  expect(logBodiesOf(event).stored).toEqual(Buffer.concat([Buffer.from(`${json}\n`), vectors]));
  expect(bodyOf(event)?.toString()).toContain('"embedding":["AACAPg=="]}');
});
