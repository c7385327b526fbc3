import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { TaskMetrics } from '../../../../src/runtime/metrics/task-metrics.ts';
import type { Mail } from '../../../../src/runtime/tasks/mail.ts';
import { type InputStatus, MailboxProcessor } from '../../../../src/runtime/tasks/mailbox-processor.ts';
import { settle, sleep, until } from './task-test-kit.ts';

interface Setup {
  /** What each call of processInput returns, in turn; the last one repeats. */
  statuses?: InputStatus[];
  onInput?: (call: number) => void;
  onMail?: (mail: Mail) => void;
  maxInputSteps?: number;
}

/** A processor over a scripted input; `log` has `input <n>` per input step and `mail <id>` per mail. */
function processorWith(setup: Setup = {}) {
  const log: string[] = [];
  const failures: unknown[] = [];
  const statuses = setup.statuses ?? ['NOTHING_AVAILABLE'];
  const metrics = new TaskMetrics();
  const backPressured = mock.method(metrics, 'backPressured');
  let inputCalls = 0;
  let outputs = true;
  const processor = new MailboxProcessor({
    input: {
      processInput: async () => {
        inputCalls++;
        log.push(`input ${inputCalls}`);
        setup.onInput?.(inputCalls);
        return statuses[Math.min(inputCalls, statuses.length) - 1] as InputStatus;
      },
    },
    runMail: async (mail) => {
      log.push(`mail ${mail.kind === 'processing-time' ? mail.operatorIndex : 'checkpointId' in mail ? mail.checkpointId : '?'}`);
      setup.onMail?.(mail);
    },
    outputsAvailable: () => outputs,
    metrics,
    onFailure: (error) => failures.push(error),
    maxInputSteps: setup.maxInputSteps ?? 64,
  });
  return {
    processor,
    log,
    failures,
    backPressured,
    metrics,
    inputCalls: () => inputCalls,
    setOutputs: (available: boolean) => {
      outputs = available;
    },
  };
}

const mail = (checkpointId: number): Mail => ({ kind: 'notify-checkpoint-complete', checkpointId });

test('mails run before input', async (t) => {
  const { processor, log, inputCalls } = processorWith();
  t.after(() => processor.close());
  processor.put(mail(1));
  processor.put(mail(2));
  await sleep(10);
  assert.deepEqual(log, [], 'nothing runs before start(): an operator opening may queue mails');
  processor.start();
  await until(() => inputCalls() === 1, 'the first input step');
  assert.deepEqual(log, ['mail 1', 'mail 2', 'input 1']);
});

test('a mail put during an input step runs before the next input step', async (t) => {
  const box: { processor?: MailboxProcessor } = {};
  const setup = processorWith({
    statuses: ['MORE_AVAILABLE', 'MORE_AVAILABLE', 'NOTHING_AVAILABLE'],
    onInput: (call) => {
      if (call === 1) box.processor?.put(mail(9));
    },
  });
  box.processor = setup.processor;
  t.after(() => setup.processor.close());
  setup.processor.start();
  await until(() => setup.inputCalls() === 3, 'three input steps');
  assert.deepEqual(setup.log, ['input 1', 'mail 9', 'input 2', 'input 3']);
});

test('no input is taken while an output has no credit; the loop reports back pressure and takes input again on resume', async (t) => {
  const { processor, log, inputCalls, backPressured, setOutputs } = processorWith();
  t.after(() => processor.close());
  setOutputs(false);
  processor.start();
  await settle();
  assert.equal(inputCalls(), 0);
  assert.equal(backPressured.mock.callCount(), 1);
  processor.put(mail(1));
  await settle();
  assert.deepEqual(log, ['mail 1'], 'mails still run under back pressure');
  assert.equal(backPressured.mock.callCount(), 2);

  setOutputs(true);
  await settle();
  assert.equal(inputCalls(), 0, 'credit alone does not wake the loop');
  processor.start();
  await until(() => inputCalls() === 1, 'input after resume');
  assert.deepEqual(log, ['mail 1', 'input 1']);
});

test('at most maxInputSteps input steps run per turn, then the loop yields (a queued message gets in) and goes on', async (t) => {
  const { processor, log, inputCalls } = processorWith({
    maxInputSteps: 3,
    statuses: ['MORE_AVAILABLE', 'MORE_AVAILABLE', 'MORE_AVAILABLE', 'MORE_AVAILABLE', 'MORE_AVAILABLE', 'MORE_AVAILABLE', 'NOTHING_AVAILABLE'],
    onInput: (call) => {
      if (call === 1) setImmediate(() => log.push('message'));
    },
  });
  t.after(() => processor.close());
  processor.start();
  await until(() => inputCalls() === 7, 'seven input steps');
  await settle();
  assert.deepEqual(log, ['input 1', 'input 2', 'input 3', 'message', 'input 4', 'input 5', 'input 6', 'input 7']);
});

test('a turn takes input for at most about 5 ms, however few steps that is: slow steps that never wait let a queued message in', async (t) => {
  const { processor, log, inputCalls } = processorWith({
    maxInputSteps: 64,
    statuses: ['MORE_AVAILABLE', 'MORE_AVAILABLE', 'MORE_AVAILABLE', 'MORE_AVAILABLE', 'NOTHING_AVAILABLE'],
    onInput: (call) => {
      if (call === 1) setImmediate(() => log.push('message'));
      const until = performance.now() + 3; // a slow function, no I/O
      while (performance.now() < until);
    },
  });
  t.after(() => processor.close());
  processor.start();
  await until(() => inputCalls() === 5, 'five input steps');
  await settle();
  // Two 3 ms steps reach 5 ms; a step a loaded machine stretches past 5 ms ends the turn after one.
  const message = log.indexOf('message');
  assert.ok(message === 1 || message === 2, `the message ran after one or two input steps, not after all five: ${log.join(', ')}`);
  assert.deepEqual(
    log.filter((entry) => entry !== 'message'),
    ['input 1', 'input 2', 'input 3', 'input 4', 'input 5'],
  );
});

test('NOTHING_AVAILABLE puts the loop to sleep until resume()', async (t) => {
  const { processor, inputCalls } = processorWith({ statuses: ['NOTHING_AVAILABLE'] });
  t.after(() => processor.close());
  processor.start();
  await until(() => inputCalls() === 1, 'the first input step');
  await sleep(20);
  assert.equal(inputCalls(), 1);
  processor.start();
  processor.start();
  await until(() => inputCalls() === 2, 'the input step after resume');
  await sleep(10);
  assert.equal(inputCalls(), 2, 'two resumes before the loop ran wake it once');
});

test('POLL_LATER makes the loop poll again shortly by itself', async (t) => {
  const { processor, inputCalls } = processorWith({ statuses: ['POLL_LATER', 'POLL_LATER', 'NOTHING_AVAILABLE'] });
  t.after(() => processor.close());
  processor.start();
  await until(() => inputCalls() === 3, 'two polls again without a resume', 500);
  await sleep(20);
  assert.equal(inputCalls(), 3);
});

test('after END_OF_INPUT the loop does not poll by itself, but mails still run (the input is asked again after them)', async (t) => {
  const { processor, log, inputCalls } = processorWith({ statuses: ['END_OF_INPUT'] });
  t.after(() => processor.close());
  processor.start();
  await until(() => inputCalls() === 1, 'the first input step');
  await sleep(20);
  assert.equal(inputCalls(), 1);
  processor.put(mail(3));
  await until(() => log.includes('mail 3'), 'the mail');
  await settle();
  assert.deepEqual(log, ['input 1', 'mail 3', 'input 2']);
});

test('a mail that throws calls onFailure once and the loop runs nothing more', async () => {
  const boom = new Error('mail failed');
  const { processor, log, failures, inputCalls } = processorWith({
    onMail: (m) => {
      if (m.kind === 'notify-checkpoint-complete' && m.checkpointId === 2) throw boom;
    },
  });
  processor.put(mail(1));
  processor.put(mail(2));
  processor.put(mail(3));
  processor.start();
  await until(() => failures.length > 0, 'the failure');
  processor.put(mail(4));
  processor.start();
  await sleep(10);
  assert.deepEqual(failures, [boom]);
  assert.deepEqual(log, ['mail 1', 'mail 2']);
  assert.equal(inputCalls(), 0);
  assert.equal(processor.failed, true);
});

test('an input step that throws calls onFailure once and the loop runs nothing more', async () => {
  const boom = new Error('input failed');
  const { processor, log, failures, inputCalls } = processorWith({
    statuses: ['MORE_AVAILABLE'],
    onInput: (call) => {
      if (call === 2) throw boom;
    },
  });
  processor.start();
  await until(() => failures.length > 0, 'the failure');
  processor.put(mail(1));
  processor.start();
  await sleep(10);
  assert.deepEqual(failures, [boom]);
  assert.equal(inputCalls(), 2);
  assert.deepEqual(log, ['input 1', 'input 2']);
  assert.equal(processor.failed, true);
});

test('close() stops the loop: queued mails and later wake-ups run nothing', async () => {
  const box: { processor?: MailboxProcessor } = {};
  const setup = processorWith({
    onMail: (m) => {
      if (m.kind === 'notify-checkpoint-complete' && m.checkpointId === 1) box.processor?.close();
    },
  });
  box.processor = setup.processor;
  setup.processor.put(mail(1));
  setup.processor.put(mail(2));
  setup.processor.start();
  await until(() => setup.log.length > 0, 'the first mail');
  setup.processor.put(mail(3));
  setup.processor.start();
  await sleep(10);
  assert.deepEqual(setup.log, ['mail 1']);
  assert.equal(setup.inputCalls(), 0);
  assert.deepEqual(setup.failures, []);
});

test('close() cancels a pending poll of a source that asked to be polled later', async () => {
  const { processor, inputCalls } = processorWith({ statuses: ['POLL_LATER'] });
  processor.start();
  await until(() => inputCalls() === 1, 'the first poll');
  processor.close();
  await sleep(20);
  assert.equal(inputCalls(), 1);
});

test('time spent processing counts as busy time', async (t) => {
  const { processor, metrics, inputCalls } = processorWith({
    statuses: ['MORE_AVAILABLE', 'NOTHING_AVAILABLE'],
    onInput: () => {
      const started = performance.now();
      while (performance.now() - started < 5) {}
    },
  });
  t.after(() => processor.close());
  processor.start();
  await until(() => inputCalls() === 2, 'two input steps');
  await settle();
  assert.ok(metrics.busyMs >= 9, `busy ${metrics.busyMs} ms`);
});
