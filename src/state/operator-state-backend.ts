import { WeirError } from '../core/errors/weir-error.ts';
import type { OperatorStateStore } from '../core/state/operator-state-store.ts';
import type { ListState } from '../core/state/state-types.ts';
import { DataInputDeserializer } from './data-input-deserializer.ts';
import { DataOutputSerializer } from './data-output-serializer.ts';
import { type OperatorStateDistributionMode, PartitionableListState } from './partitionable-list-state.ts';
import {
  checksum,
  deserializeStateValue,
  OPERATOR_STATE_FORMAT_VERSION,
  OPERATOR_STATE_MAGIC,
  readSnapshotHeader,
  serializeStateValue,
} from './state-snapshot-format.ts';

const MODE_CODES: Record<OperatorStateDistributionMode, number> = { split: 1, union: 2 };
const MODES: readonly (OperatorStateDistributionMode | undefined)[] = [undefined, 'split', 'union'];

function modeLabel(mode: OperatorStateDistributionMode): string {
  return mode === 'split' ? 'list state' : 'union list state';
}

/**
 * Operator state of one subtask (Flink's `DefaultOperatorStateBackend`): named lists that belong to
 * the subtask rather than to a key, used by sources and sinks (offsets, pending transactions).
 * Entries must be structured-cloneable (snapshots write them with `node:v8` serialize).
 *
 * On restore at a new parallelism ({@link OperatorStateBackend.restoreFor}):
 * - list state (`split`): at the same parallelism each subtask gets back its own list; otherwise
 *   the lists of all old subtasks, concatenated in old subtask order, are cut into `newParallelism`
 *   contiguous parts whose sizes differ by at most one (the first parts get the extra entries);
 * - union list state: every subtask gets the concatenation of all old subtasks' lists.
 *
 * Snapshot format (version 1, integers little-endian):
 * ```
 * "WOSB"   magic, 4 bytes
 * uint16   format version
 * uint32 S, S x {uint8 mode (1 split, 2 union), uint32 length + UTF-8 name, uint32 entry count,
 *                uint32 length + v8(entries array)}
 * uint32   crc32 of every byte above
 * ```
 */
export class OperatorStateBackend implements OperatorStateStore {
  readonly #states = new Map<string, PartitionableListState<unknown>>();
  /** Names asked for by getListState / getUnionListState (restored states are not, until asked). */
  readonly #registered = new Set<string>();

  /** List state redistributed evenly when the parallelism changes (Flink's SPLIT_DISTRIBUTE). */
  getListState<T>(name: string): ListState<T> {
    return this.#getPartitionable(name, 'split') as PartitionableListState<T>;
  }

  /** List state every subtask gets in full on restore (Flink's UNION). */
  getUnionListState<T>(name: string): ListState<T> {
    return this.#getPartitionable(name, 'union') as PartitionableListState<T>;
  }

  /** The names of all states, asked for or restored. */
  stateNames(): string[] {
    return [...this.#states.keys()];
  }

  #getPartitionable(name: string, mode: OperatorStateDistributionMode): PartitionableListState<unknown> {
    if (typeof name !== 'string' || name.length === 0) {
      throw new WeirError('INVALID_STATE_NAME', `operator ${modeLabel(mode)} needs a name, got ${JSON.stringify(name)}`, {
        hint: 'give every state a non-empty name, unique within its operator; it identifies the state in checkpoints',
      });
    }
    const existing = this.#states.get(name);
    if (existing === undefined) {
      const state = new PartitionableListState<unknown>(name, mode);
      this.#states.set(name, state);
      this.#registered.add(name);
      return state;
    }
    if (existing.mode !== mode) {
      const message = this.#registered.has(name)
        ? `operator state "${name}" is used both as ${modeLabel(existing.mode)} and as ${modeLabel(mode)}`
        : `operator state "${name}" is asked for as ${modeLabel(mode)}, but the restored checkpoint holds it as ${modeLabel(existing.mode)}`;
      throw new WeirError('STATE_KIND_MISMATCH', message, {
        hint: this.#registered.has(name) ? 'give each state its own name' : 'a state keeps its kind for the life of a job; give the new state a new name',
      });
    }
    this.#registered.add(name);
    return existing;
  }

  /** Writes every state (format in the class documentation). */
  snapshot(): Uint8Array {
    const out = new DataOutputSerializer(256);
    out.writeBytes(OPERATOR_STATE_MAGIC);
    out.writeUint16(OPERATOR_STATE_FORMAT_VERSION);
    out.writeUint32(this.#states.size);
    for (const state of this.#states.values()) {
      const entries = state.get();
      out.writeUint8(MODE_CODES[state.mode]);
      out.writeString(state.name);
      out.writeUint32(entries.length);
      out.writeBlob(serializeStateValue(entries, `operator ${modeLabel(state.mode)} "${state.name}"`));
    }
    out.writeUint32(checksum(out.view()));
    return out.toUint8Array();
  }

  /**
   * The operator state of subtask `subtaskIndex` of `newParallelism`, from the snapshots of all old
   * subtasks: `snapshots[i]` from old subtask i, undefined for an old subtask that had no operator
   * state (its lists are empty), none at all for a fresh start. Deterministic: every new subtask
   * computes its share from the same inputs.
   */
  static restoreFor(snapshots: readonly (Uint8Array | undefined)[], newParallelism: number, subtaskIndex: number): OperatorStateBackend {
    if (!Number.isInteger(newParallelism) || newParallelism < 1 || !Number.isInteger(subtaskIndex) || subtaskIndex < 0 || subtaskIndex >= newParallelism) {
      throw new WeirError('INVALID_OPERATOR_INDEX', `subtask ${subtaskIndex} of parallelism ${newParallelism} does not exist`, {
        fault: 'internal',
        hint: 'subtask indexes run from 0 to parallelism - 1',
      });
    }
    const merged = new Map<string, { mode: OperatorStateDistributionMode; perSubtask: unknown[][] }>();
    for (let s = 0; s < snapshots.length; s++) {
      const snapshot = snapshots[s];
      if (snapshot === undefined) continue;
      const source = `operator state snapshot ${s + 1} of ${snapshots.length}`;
      for (const { name, mode, entries } of readOperatorSnapshot(new DataInputDeserializer(snapshot, source))) {
        let state = merged.get(name);
        if (state === undefined) {
          state = { mode, perSubtask: snapshots.map(() => []) };
          merged.set(name, state);
        } else if (state.mode !== mode) {
          throw new WeirError('STATE_KIND_MISMATCH', `${source} holds operator state "${name}" as ${modeLabel(mode)}, others as ${modeLabel(state.mode)}`, {
            fault: 'external',
            hint: 'the snapshots do not belong to one checkpoint; restore from another checkpoint or savepoint',
          });
        }
        state.perSubtask[s] = entries;
      }
    }
    const backend = new OperatorStateBackend();
    const sameParallelism = snapshots.length === newParallelism;
    for (const [name, { mode, perSubtask }] of merged) {
      let entries: unknown[];
      if (mode === 'union') entries = perSubtask.flat();
      else if (sameParallelism) entries = perSubtask[subtaskIndex]!;
      else entries = splitShare(perSubtask.flat(), newParallelism, subtaskIndex);
      backend.#states.set(name, new PartitionableListState(name, mode, entries));
    }
    return backend;
  }
}

/** Part `index` of `entries` cut into `parts` contiguous parts whose sizes differ by at most one. */
function splitShare<T>(entries: T[], parts: number, index: number): T[] {
  const base = Math.floor(entries.length / parts);
  const extra = entries.length % parts;
  const start = index * base + Math.min(index, extra);
  return entries.slice(start, start + base + (index < extra ? 1 : 0));
}

interface OperatorStateEntries {
  name: string;
  mode: OperatorStateDistributionMode;
  entries: unknown[];
}

function readOperatorSnapshot(input: DataInputDeserializer): OperatorStateEntries[] {
  readSnapshotHeader(input, OPERATOR_STATE_MAGIC, 'operator state', OPERATOR_STATE_FORMAT_VERSION);
  const count = input.readUint32('the state count');
  const raw: { name: string; mode: OperatorStateDistributionMode; length: number; blob: Uint8Array }[] = [];
  for (let i = 0; i < count; i++) {
    const code = input.readUint8('a distribution mode');
    const mode = MODES[code];
    if (mode === undefined) throw input.corrupt(`unknown distribution mode code ${code}`);
    const name = input.readString('a state name');
    const length = input.readUint32('an entry count');
    raw.push({ name, mode, length, blob: input.readBlob(`the entries of "${name}"`) });
  }
  const end = input.position;
  if (input.readUint32('the checksum') !== checksum(input.slice(0, end))) throw input.corrupt('the checksum does not match');
  if (input.remaining !== 0) throw input.corrupt(`it has ${input.remaining} bytes after its checksum`);
  return raw.map(({ name, mode, length, blob }) => {
    const entries = deserializeStateValue(blob, input, `the entries of "${name}"`);
    if (!Array.isArray(entries) || entries.length !== length) throw input.corrupt(`operator state "${name}" does not hold ${length} entries`);
    return { name, mode, entries };
  });
}
