import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StatusWatermarkValve, type WatermarkEvent } from '../../../../src/runtime/watermarks/status-watermark-valve.ts';

function run(_valve: StatusWatermarkValve, action: (out: WatermarkEvent[]) => void): WatermarkEvent[] {
  const out: WatermarkEvent[] = [];
  action(out);
  return out;
}
const wm = (watermark: number): WatermarkEvent => ({ kind: 'watermark', watermark });

test('the output is the minimum over the channels and only rises', () => {
  const valve = new StatusWatermarkValve(3);
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(0, 10, out)),
    [],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(1, 20, out)),
    [],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(2, 5, out)),
    [wm(5)],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(2, 30, out)),
    [wm(10)],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(0, 8, out)),
    [],
    'a channel going back changes nothing',
  );
  assert.equal(valve.currentWatermark, 10);
});

test('an idle channel is left out; all idle makes the output idle after the highest watermark; a channel back is active', () => {
  const valve = new StatusWatermarkValve(2);
  run(valve, (out) => valve.inputWatermark(0, 100, out));
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(1, 50, out)),
    [wm(50)],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermarkStatus(1, true, out)),
    [wm(100)],
    'the idle channel held the minimum',
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(0, 150, out)),
    [wm(150)],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermarkStatus(0, true, out)),
    [{ kind: 'idle' }],
  );
  assert.equal(valve.isIdle, true);
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermarkStatus(1, false, out)),
    [{ kind: 'active' }],
  );
  // Channel 1 came back behind the output (50 < 150): it does not count until it catches up.
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(1, 120, out)),
    [],
  );
  assert.deepEqual(
    run(valve, (out) => valve.inputWatermark(1, 170, out)),
    [wm(170)],
  );
});

test('an ended channel stops counting; when all have ended the output is +Infinity', () => {
  const valve = new StatusWatermarkValve(2);
  run(valve, (out) => valve.inputWatermark(0, 10, out));
  run(valve, (out) => valve.inputWatermark(1, 20, out));
  assert.deepEqual(
    run(valve, (out) => valve.endOfInput(0, out)),
    [wm(20)],
  );
  assert.deepEqual(
    run(valve, (out) => valve.endOfInput(1, out)),
    [wm(Number.POSITIVE_INFINITY)],
  );
});

test('an ended channel does not keep the output active while the others are idle', () => {
  const valve = new StatusWatermarkValve(2);
  run(valve, (out) => valve.inputWatermark(0, 10, out));
  run(valve, (out) => valve.inputWatermarkStatus(1, true, out));
  assert.deepEqual(
    run(valve, (out) => valve.endOfInput(0, out)),
    [{ kind: 'idle' }],
    'the idle channel may still send records: no +Infinity yet',
  );
  assert.deepEqual(
    run(valve, (out) => valve.endOfInput(1, out)),
    [{ kind: 'active' }, wm(Number.POSITIVE_INFINITY)],
  );
});
