import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeapPriorityQueue } from '../../../src/state/heap-priority-queue.ts';

interface Item {
  value: number;
  heapIndex: number;
}

test('the heap polls in order and removes arbitrary elements', () => {
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const queue = new HeapPriorityQueue<Item>((a, b) => a.value - b.value);
  const live = new Set<Item>();
  for (let i = 0; i < 20_000; i++) {
    const roll = random();
    if (roll < 0.5 || live.size === 0) {
      const item = { value: Math.floor(random() * 1000), heapIndex: -1 };
      queue.add(item);
      live.add(item);
    } else if (roll < 0.75) {
      const victim = [...live][Math.floor(random() * live.size)]!;
      assert.equal(queue.remove(victim), true);
      assert.equal(queue.remove(victim), false);
      live.delete(victim);
    } else {
      const min = Math.min(...[...live].map((item) => item.value));
      const head = queue.poll()!;
      assert.equal(head.value, min);
      live.delete(head);
    }
    assert.equal(queue.size, live.size);
  }
  let last = -Infinity;
  for (let item = queue.poll(); item !== undefined; item = queue.poll()) {
    assert.ok(item.value >= last);
    last = item.value;
  }
  assert.equal(queue.peek(), undefined);
});
