import type { JobGraph } from '../graph/job-graph.ts';
import type { StreamGraph } from '../graph/stream-graph.ts';
import { RecordWriter } from '../runtime/io/record-writer.ts';
import { ExchangeChannelWriter, TransactionGateWriter } from './exchange-channel-writer.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import type { ChannelMark, ChannelSkip, ExchangeInputPartition } from './exchange-input.ts';
import type { Stage, StagePlan } from './stage-plan.ts';
import type { TaskCheckpoint } from './task-checkpoint.ts';
import type { TaskOutput } from './task-output.ts';

/** A side output no stream reads: the task's transaction as one more output of its chain. */
const TRANSACTION_TAG = '\0weir-task-transaction';

/**
 * The outputs of a task's chain, in place of channels to other subtasks: one record writer per
 * edge out of its stage, over the exchange topic's partitions it writes (a forward exchange: task N
 * writes partition N, as subtask N feeds subtask N in one process), and the task's transaction as
 * one more (its gate: back pressure and the seal at the barrier). `barrierOf` and `endsAt` say
 * which checkpoint is a savepoint's part, and which the task's final one (exchange-channel-writer.ts).
 */
export function taskRecordWriters(options: {
  graph: JobGraph;
  plan: StagePlan;
  streamGraph: StreamGraph;
  stage: Stage;
  task: number;
  maxParallelism: number;
  output: TaskOutput;
  barrierOf: (checkpointId: number) => SavepointBarrier | undefined;
  endsAt: (checkpointId: number) => boolean;
}): RecordWriter[] {
  const { graph, plan, streamGraph, stage, task, maxParallelism, output } = options;
  const vertex = graph.vertices[stage.vertices[0] as number];
  if (vertex === undefined) throw new Error(`stage ${stage.uid} has no vertex`);
  const writers = graph.edges
    .filter((edge) => edge.source === vertex.id)
    .map((edge) => {
      const exchange = plan.exchanges.find((entry) => entry.edge === edge.id);
      if (exchange === undefined) throw new Error(`edge ${edge.id} of stage ${stage.uid} is no exchange`);
      const partitions = exchange.partitioning === 'forward' ? [task] : Array.from({ length: exchange.partitions }, (_, partition) => partition);
      return new RecordWriter({
        writers: partitions.map((partition) => new ExchangeChannelWriter(output, exchange.topic, partition, task, options.barrierOf, options.endsAt)),
        partitioning: exchange.partitioning,
        keySelector: streamGraph.edges[edge.streamEdge]?.keySelector,
        maxParallelism,
        operatorName: vertex.name,
        subtaskIndex: task,
        outputTag: edge.outputTag,
      });
    });
  writers.push(
    new RecordWriter({
      writers: [new TransactionGateWriter(output)],
      partitioning: 'forward',
      keySelector: undefined,
      maxParallelism,
      operatorName: vertex.name,
      subtaskIndex: task,
      outputTag: TRANSACTION_TAG,
    }),
  );
  return writers;
}

/** A task's input channels (one per upstream task of each exchange it reads), which head input each feeds, and its exchange partitions. */
export interface TaskInputs {
  inputChannels: number[];
  inputIndexOf: Map<number, number>;
  partitions: ExchangeInputPartition[];
}

/** The exchange partitions a task reads (its number's, of each exchange into its stage) from its restored offsets on, and their channels. */
export function taskInputs(options: {
  graph: JobGraph;
  plan: StagePlan;
  taskCounts: readonly number[];
  stage: Stage;
  task: number;
  restored: TaskCheckpoint | undefined;
}): TaskInputs {
  const { graph, plan, taskCounts, stage, task, restored } = options;
  const inputChannels: number[] = [];
  const inputIndexOf = new Map<number, number>();
  const partitions = stage.inputs.map((index) => {
    const exchange = plan.exchanges[index] as (typeof plan.exchanges)[number];
    const firstChannel = inputChannels.length;
    const inputIndex = graph.edges[exchange.edge]?.inputIndex ?? 0;
    // A forward exchange's partition has one writer, the upstream task of the same number.
    const forward = exchange.partitioning === 'forward';
    for (let upstream = 0; upstream < (forward ? 1 : (taskCounts[exchange.from] as number)); upstream++) {
      inputIndexOf.set(inputChannels.length, inputIndex);
      inputChannels.push(inputChannels.length);
    }
    const restoredOffset = restored?.offsets.find((entry) => entry.topic === exchange.topic && entry.partition === task)?.offset;
    return { topic: exchange.topic, partition: task, firstChannel, forward, offset: restoredOffset === undefined ? undefined : BigInt(restoredOffset) };
  });
  return { inputChannels, inputIndexOf, partitions };
}

/**
 * What a task behind exchanges restores of its channels: what each upstream task's latest
 * watermark frame said and whether its end frame came (an idle or ended upstream task writes no
 * more frames, and those it wrote are behind the restored offsets), and the frames of a savepoint's
 * alignment already in its state (read past).
 */
export function restoredChannels(restored: TaskCheckpoint | undefined): { marks: ChannelMark[] | undefined; skips: ChannelSkip[] } {
  return {
    marks: restored?.channels?.map((mark) => ({
      channel: mark.channel,
      watermark: mark.watermark ?? Number.NEGATIVE_INFINITY,
      idle: mark.idle,
      ...(mark.ended === true ? { ended: true } : {}),
    })),
    skips: (restored?.skips ?? []).map((skip) => ({ ...skip, below: BigInt(skip.below) })),
  };
}
