import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChannelMessage } from '../../../../src/runtime/io/channel-message.ts';
import { InputGate } from '../../../../src/runtime/io/input-gate.ts';

const records = (channel: number, ...values: number[]): ChannelMessage => ({ kind: 'records', channel, records: values });

/** Polls until the gate has nothing to give, naming each message `<channel>:<first record>` (or its kind). */
function drain(gate: InputGate): string[] {
  const polled: string[] = [];
  for (let message = gate.poll(); message !== undefined; message = gate.poll()) {
    polled.push(message.kind === 'records' ? `${message.channel}:${message.records[0]}` : `${message.channel}:${message.kind}`);
  }
  return polled;
}

test('messages come out in arrival order across channels, then nothing', () => {
  const gate = new InputGate();
  gate.push(records(0, 1));
  gate.push(records(1, 2));
  gate.push({ kind: 'watermark', channel: 0, watermark: 5 });
  gate.push(records(0, 3));
  gate.push({ kind: 'end-of-data', channel: 1 });
  assert.equal(gate.size, 5);
  assert.deepEqual(drain(gate), ['0:1', '1:2', '0:watermark', '0:3', '1:end-of-data']);
  assert.equal(gate.poll(), undefined);
  assert.equal(gate.size, 0);
});

test('a blocked channel holds its messages back while the other channels flow', () => {
  const gate = new InputGate();
  gate.blockConsumption(0);
  assert.equal(gate.isBlocked(0), true);
  assert.equal(gate.isBlocked(1), false);
  gate.push(records(0, 1));
  gate.push(records(1, 2));
  gate.push(records(0, 3));
  gate.push(records(1, 4));
  assert.deepEqual(drain(gate), ['1:2', '1:4']);
  assert.equal(gate.size, 2, 'the held messages still count as waiting');
});

test('on resume the held messages come back in order, before the messages that arrived after them', () => {
  const gate = new InputGate();
  gate.push(records(0, 1));
  gate.blockConsumption(0);
  gate.push(records(1, 2));
  gate.push(records(0, 3));
  assert.deepEqual(drain(gate), ['1:2']);
  gate.push(records(1, 4));
  gate.push(records(0, 5));
  gate.resumeConsumption();
  assert.equal(gate.isBlocked(0), false);
  assert.deepEqual(drain(gate), ['0:1', '0:3', '1:4', '0:5']);
});

test('messages of a blocked channel not polled yet keep their place behind the held ones', () => {
  const gate = new InputGate();
  gate.blockConsumption(0);
  gate.push(records(0, 1));
  gate.push(records(1, 2));
  gate.push(records(0, 3));
  assert.equal(gate.poll()?.channel, 1, 'the first poll skips message 1 (held) and gives channel 1');
  gate.resumeConsumption();
  assert.deepEqual(drain(gate), ['0:1', '0:3']);
});

test('several channels can be blocked at once; resume unblocks every one of them', () => {
  const gate = new InputGate();
  gate.blockConsumption(0);
  gate.blockConsumption(2);
  gate.push(records(2, 1));
  gate.push(records(0, 2));
  gate.push(records(1, 3));
  gate.push(records(2, 4));
  assert.deepEqual(drain(gate), ['1:3']);
  gate.resumeConsumption();
  assert.equal(gate.isBlocked(0), false);
  assert.equal(gate.isBlocked(2), false);
  assert.deepEqual(drain(gate), ['2:1', '0:2', '2:4']);
});

test('a resume with nothing held changes nothing', () => {
  const gate = new InputGate();
  gate.push(records(0, 1));
  gate.resumeConsumption();
  assert.deepEqual(drain(gate), ['0:1']);
});
