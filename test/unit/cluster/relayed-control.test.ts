import assert from 'node:assert/strict';
import { test } from 'node:test';
import { controlSnapshot, RelayedControl } from '../../../src/cluster/relayed-control.ts';
import { type ControlReader, type ControlRecord, ControlState } from '../../../src/cluster/savepoint-control.ts';

/** A reader as ControlReader answers (its `halts` as it is written), over a state the test feeds, with the topic's end when it first read it. */
function reader(history: bigint | undefined): { reader: ControlReader; add: (record: Omit<ControlRecord, 'version' | 'at'>, offset: bigint) => void } {
  const state = new ControlState();
  const fake = {
    state,
    halts(id: number): boolean {
      if (history === undefined) return false;
      const active = state.active;
      if (active?.id === id && active.stop !== undefined) return true;
      return state.stopped === id && state.doneOffset >= history;
    },
  };
  return { reader: fake as unknown as ControlReader, add: (record, offset) => state.add({ version: 1, at: 0, ...record }, offset) };
}

/** The relayed view answers every id as the member's reader does. */
function assertSameAnswers(real: ControlReader, ids: number): void {
  const relayed = new RelayedControl(controlSnapshot(real));
  assert.deepEqual(relayed.active, real.state.active);
  for (let id = 1; id <= ids; id++) {
    assert.equal(relayed.gaveUp(id), real.state.gaveUp(id), `gaveUp(${id})`);
    assert.equal(relayed.halts(id), real.halts(id), `halts(${id})`);
  }
}

test('a task thread answers savepoint questions as its member’s control reader does, record after record', () => {
  const { reader: real, add } = reader(3n);
  const steps: [Omit<ControlRecord, 'version' | 'at'>, bigint][] = [
    [{ kind: 'request', id: 1, target: '/sp/1' }, 0n],
    [{ kind: 'done', id: 1 }, 1n],
    [{ kind: 'request', id: 2, target: '/sp/2', stop: 'suspend' }, 2n],
    [{ kind: 'aborted', id: 2 }, 3n],
    [{ kind: 'request', id: 3, target: '/sp/3', stop: 'drain' }, 4n],
    [{ kind: 'request', id: 4, target: '/sp/4', stop: 'suspend' }, 5n],
    [{ kind: 'done', id: 4 }, 6n],
  ];
  assertSameAnswers(real, 6);
  for (const [record, offset] of steps) {
    add(record, offset);
    assertSameAnswers(real, 6);
  }
  // The stopped savepoint halts a task restored from its part (done after the member first read the topic).
  assert.equal(new RelayedControl(controlSnapshot(real)).halts(4), true);
});

test('a stop done before the member first read the topic is history for its threads too', () => {
  const { reader: real, add } = reader(10n);
  add({ kind: 'request', id: 1, target: '/sp/1', stop: 'suspend' }, 0n);
  add({ kind: 'done', id: 1 }, 1n);
  assertSameAnswers(real, 2);
  assert.equal(new RelayedControl(controlSnapshot(real)).halts(1), false);
  const { reader: unread } = reader(undefined);
  assertSameAnswers(unread, 2);
});

test('a relayed view takes the next snapshot', () => {
  const { reader: real, add } = reader(0n);
  const relayed = new RelayedControl(controlSnapshot(real));
  assert.equal(relayed.active, undefined);
  add({ kind: 'request', id: 1, target: '/sp/1' }, 0n);
  relayed.update(controlSnapshot(real));
  assert.deepEqual(relayed.active, { id: 1, target: '/sp/1', stop: undefined });
});
