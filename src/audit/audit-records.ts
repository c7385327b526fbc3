/**
 * The exactly-once audit, pure: given the records an output holds (as a read_committed reader
 * sees them, or the committed files of a file sink) and what the input was, is every input there
 * exactly once, nothing from aborted input, every record right? One report says what is not.
 *
 * A record has an id (a sequence number, a key, a window): the spec says how to get it, which ids
 * are expected (0..n-1, an explicit set, or "a contiguous numeric range", whatever its ends), and
 * which ids come from aborted input. Optionally each record is checked on its own, and per key the
 * records carry a running aggregate (a count, a sum): each output of a key is the previous one
 * plus its record's delta, starting from 0, and the last one is the key's expected final value.
 */

/** A record's identity: a number (a sequence number) or a string (a key, a window, a whole value). */
export type AuditId = number | string;

/** Which ids the output must hold, each exactly once. */
export type ExpectedIds<I extends AuditId = AuditId> =
  /** The sequence numbers 0..count-1. */
  | { kind: 'sequence'; count: number }
  /** Exactly these ids. */
  | { kind: 'set'; ids: ReadonlySet<I> }
  /** Every id is an integer (as a number or as text), and every integer from the smallest to the largest is there. */
  | { kind: 'contiguous' };

/** Per-key running aggregates: the outputs of a key, in the order of their values, rise by each record's delta from 0 to the expected final value. */
export interface RunningAggregates<R> {
  keyOf(record: R): string;
  /** The aggregate the record carries (its key's running count or sum). */
  valueOf(record: R): number;
  /** What the record's input added to the aggregate. */
  deltaOf(record: R): number;
  /** Each key's final aggregate. A key not listed here is wrong as soon as it has an output. */
  expectedFinal: ReadonlyMap<string, number>;
}

export interface AuditSpec<R, I extends AuditId = AuditId> {
  idOf(record: R): I;
  /** Which ids must be there; without it only duplicates (and the checks below) are looked for. */
  expected?: ExpectedIds<I>;
  /** Whether an id belongs to input written in an aborted transaction: none may reach the output. */
  fromAborted?(id: I): boolean;
  /** Whether a record (with an expected id) is right on its own. */
  check?(record: R, id: I): boolean;
  running?: RunningAggregates<R>;
  /** How many ids each finding lists, in the order they were met (missing ones in id order). Default 10. */
  sampleSize?: number;
}

/** Records found wrong in one way: how many, of how many distinct ids, and the first of those ids. */
export interface IdFinding<I extends AuditId = AuditId> {
  records: number;
  ids: number;
  sample: I[];
}

export interface AuditReport<I extends AuditId = AuditId> {
  /** Records audited. */
  records: number;
  /** Ids seen more than once: how many ids, how many copies beyond the first, and a sample of ids with their times. */
  duplicates: { ids: number; copies: number; sample: { id: I; times: number }[] };
  /** Expected ids not seen. */
  missing: { ids: number; sample: AuditId[] };
  /** Records whose id is neither expected nor from aborted input. */
  unexpected: IdFinding<I>;
  /** Records whose id comes from aborted input. */
  fromAborted: IdFinding<I>;
  /** Records (with an expected id) that failed the spec's check. */
  wrong: IdFinding<I>;
  /** Keys whose running aggregates are not an exact sequence ending at the expected final value: its last value, and the expected one. */
  wrongKeys: { key: string; last: number; expected: number | undefined }[];
  /** Nothing duplicated, missing, unexpected, from aborted input or wrong. */
  ok: boolean;
}

/** Audits these records: one report. */
export function auditRecords<R, I extends AuditId = AuditId>(records: readonly R[], spec: AuditSpec<R, I>): AuditReport<I> {
  const audit = new RecordAudit(spec);
  audit.addAll(records);
  return audit.report();
}

/** The audit record by record, for outputs read in pieces (the parsed records need not all be kept). */
export class RecordAudit<R, I extends AuditId = AuditId> {
  readonly #spec: AuditSpec<R, I>;
  readonly #sampleSize: number;
  readonly #isExpected: (id: I) => boolean;
  /** Times each id was seen, in the order first seen. */
  readonly #counts = new Map<I, number>();
  readonly #unexpected: FindingCollector<I>;
  readonly #fromAborted: FindingCollector<I>;
  readonly #wrong: FindingCollector<I>;
  /** Per key, the values and deltas of its outputs, in the order seen. */
  readonly #byKey = new Map<string, { values: number[]; deltas: number[] }>();
  #records = 0;

  constructor(spec: AuditSpec<R, I>) {
    this.#spec = spec;
    this.#sampleSize = spec.sampleSize ?? 10;
    this.#isExpected = expectedTest(spec.expected);
    this.#unexpected = new FindingCollector(this.#sampleSize);
    this.#fromAborted = new FindingCollector(this.#sampleSize);
    this.#wrong = new FindingCollector(this.#sampleSize);
  }

  add(record: R): void {
    const spec = this.#spec;
    const id = spec.idOf(record);
    this.#records++;
    this.#counts.set(id, (this.#counts.get(id) ?? 0) + 1);
    if (spec.fromAborted?.(id) === true) this.#fromAborted.add(id);
    else if (!this.#isExpected(id)) this.#unexpected.add(id);
    else if (spec.check !== undefined && !spec.check(record, id)) this.#wrong.add(id);
    const running = spec.running;
    if (running !== undefined) {
      const key = running.keyOf(record);
      let outputs = this.#byKey.get(key);
      if (outputs === undefined) {
        outputs = { values: [], deltas: [] };
        this.#byKey.set(key, outputs);
      }
      outputs.values.push(running.valueOf(record));
      outputs.deltas.push(running.deltaOf(record));
    }
  }

  addAll(records: readonly R[]): void {
    for (let i = 0; i < records.length; i++) this.add(records[i] as R);
  }

  report(): AuditReport<I> {
    const duplicates: AuditReport<I>['duplicates'] = { ids: 0, copies: 0, sample: [] };
    for (const [id, times] of this.#counts) {
      if (times < 2) continue;
      duplicates.ids++;
      duplicates.copies += times - 1;
      if (duplicates.sample.length < this.#sampleSize) duplicates.sample.push({ id, times });
    }
    const missing = this.#missing();
    const unexpected = this.#unexpected.finding();
    const fromAborted = this.#fromAborted.finding();
    const wrong = this.#wrong.finding();
    const wrongKeys = this.#wrongKeys();
    return {
      records: this.#records,
      duplicates,
      missing,
      unexpected,
      fromAborted,
      wrong,
      wrongKeys,
      ok: duplicates.ids === 0 && missing.ids === 0 && unexpected.records === 0 && fromAborted.records === 0 && wrong.records === 0 && wrongKeys.length === 0,
    };
  }

  #missing(): AuditReport<I>['missing'] {
    const missing: AuditReport<I>['missing'] = { ids: 0, sample: [] };
    const note = (id: AuditId) => {
      missing.ids++;
      if (missing.sample.length < this.#sampleSize) missing.sample.push(id);
    };
    const expected = this.#spec.expected;
    if (expected?.kind === 'sequence') {
      for (let seq = 0; seq < expected.count; seq++) if (!this.#counts.has(seq as I)) note(seq);
    } else if (expected?.kind === 'set') {
      for (const id of expected.ids) if (!this.#counts.has(id)) note(id);
    } else if (expected?.kind === 'contiguous') {
      // Only when every id (but those from aborted input) is an integer: the range is theirs.
      const seen = new Set<number>();
      let low = Number.POSITIVE_INFINITY;
      let high = Number.NEGATIVE_INFINITY;
      for (const id of this.#counts.keys()) {
        if (this.#spec.fromAborted?.(id) === true) continue;
        const number = Number(id);
        if (!Number.isInteger(number)) return missing;
        seen.add(number);
        if (number < low) low = number;
        if (number > high) high = number;
      }
      for (let seq = low; seq <= high; seq++) if (!seen.has(seq)) note(seq);
    }
    return missing;
  }

  #wrongKeys(): AuditReport<I>['wrongKeys'] {
    const running = this.#spec.running;
    if (running === undefined) return [];
    const wrong: AuditReport<I>['wrongKeys'] = [];
    for (const [key, expected] of running.expectedFinal) {
      const { last, exact } = runningAggregate(this.#byKey.get(key));
      if (!exact || last !== expected) wrong.push({ key, last, expected });
    }
    for (const [key, outputs] of this.#byKey) {
      if (!running.expectedFinal.has(key)) wrong.push({ key, last: runningAggregate(outputs).last, expected: undefined });
    }
    return wrong;
  }
}

/**
 * A key's outputs in the order of their values (stable: equal values keep the order seen): the last
 * value (0 without outputs), and whether each is exactly the previous one plus its delta, from 0.
 */
function runningAggregate(outputs: { values: number[]; deltas: number[] } | undefined): { last: number; exact: boolean } {
  if (outputs === undefined) return { last: 0, exact: true };
  const { values, deltas } = outputs;
  const order = Array.from(values.keys()).sort((a, b) => (values[a] as number) - (values[b] as number));
  let previous = 0;
  let exact = true;
  for (const index of order) {
    const value = values[index] as number;
    if (value - previous !== deltas[index]) exact = false;
    previous = value;
  }
  return { last: previous, exact };
}

function expectedTest<I extends AuditId>(expected: ExpectedIds<I> | undefined): (id: I) => boolean {
  switch (expected?.kind) {
    case 'sequence':
      return (id) => typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < expected.count;
    case 'set':
      return (id) => expected.ids.has(id);
    default:
      return () => true;
  }
}

/** Counts the records of a finding, their distinct ids and a sample of those ids in the order met. */
class FindingCollector<I extends AuditId> {
  readonly #sampleSize: number;
  readonly #ids = new Set<I>();
  readonly #sample: I[] = [];
  #records = 0;

  constructor(sampleSize: number) {
    this.#sampleSize = sampleSize;
  }

  add(id: I): void {
    this.#records++;
    if (this.#ids.has(id)) return;
    this.#ids.add(id);
    if (this.#sample.length < this.#sampleSize) this.#sample.push(id);
  }

  finding(): IdFinding<I> {
    return { records: this.#records, ids: this.#ids.size, sample: [...this.#sample] };
  }
}
