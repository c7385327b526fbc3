/** An element that knows its position in a {@link HeapPriorityQueue} (-1 when not queued). */
export interface HeapPriorityQueueElement {
  heapIndex: number;
}

/**
 * A binary min-heap whose elements carry their own index (Flink's `HeapPriorityQueue`), so an
 * element can be removed in O(log n) without searching and without leaving tombstones behind.
 */
export class HeapPriorityQueue<T extends HeapPriorityQueueElement> {
  readonly #heap: T[] = [];
  readonly #compare: (a: T, b: T) => number;

  /** `compare(a, b) < 0` when `a` comes first. */
  constructor(compare: (a: T, b: T) => number) {
    this.#compare = compare;
  }

  get size(): number {
    return this.#heap.length;
  }

  peek(): T | undefined {
    return this.#heap[0];
  }

  add(element: T): void {
    const heap = this.#heap;
    element.heapIndex = heap.length;
    heap.push(element);
    this.#siftUp(heap.length - 1);
  }

  poll(): T | undefined {
    const heap = this.#heap;
    const head = heap[0];
    if (head === undefined) return undefined;
    this.#removeAt(0);
    return head;
  }

  /** Removes `element` if it is in this queue; returns whether it was. */
  remove(element: T): boolean {
    const index = element.heapIndex;
    if (index < 0 || this.#heap[index] !== element) return false;
    this.#removeAt(index);
    return true;
  }

  /** The elements in no particular order. */
  values(): readonly T[] {
    return this.#heap;
  }

  #removeAt(index: number): void {
    const heap = this.#heap;
    const removed = heap[index]!;
    const last = heap.pop()!;
    removed.heapIndex = -1;
    if (index === heap.length) return;
    heap[index] = last;
    last.heapIndex = index;
    if (index > 0 && this.#compare(last, heap[(index - 1) >> 1]!) < 0) this.#siftUp(index);
    else this.#siftDown(index);
  }

  #siftUp(start: number): void {
    const heap = this.#heap;
    const element = heap[start]!;
    let index = start;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (this.#compare(element, parent) >= 0) break;
      heap[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    heap[index] = element;
    element.heapIndex = index;
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    const length = heap.length;
    const element = heap[start]!;
    let index = start;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= length) break;
      const right = child + 1;
      if (right < length && this.#compare(heap[right]!, heap[child]!) < 0) child = right;
      const smallest = heap[child]!;
      if (this.#compare(smallest, element) >= 0) break;
      heap[index] = smallest;
      smallest.heapIndex = index;
      index = child;
    }
    heap[index] = element;
    element.heapIndex = index;
  }
}
