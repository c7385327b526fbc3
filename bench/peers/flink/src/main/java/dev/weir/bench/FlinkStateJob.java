package dev.weir.bench;

import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The Flink peer of `npm run bench:state` (bench/state-flink.ts): the same job as Weir's
 * bench/jobs/keyed-state-job.ts on Apache Flink 2.0, local execution: a generator over N keys
 * ({@code key-<seq % N>}, amount {@code seq % 10 + 1}) -> keyBy -> a small object per key
 * ({count, sum, last}) in ValueState -> discarding sink, parallelism 1, exactly-once checkpoints
 * every interval to a folder, the state backend given (rocksdb with incremental checkpoints, or
 * hashmap). A start resumes from the newest complete checkpoint in the folder, so the bench can
 * SIGKILL it and time the restore.
 *
 * <p>Standard output, for the bench: {@code processed <epoch ms> <records>} every 250 ms, and
 * {@code first-record <epoch ms>} once. Every gap of 5 ms or more between two records of the keyed
 * task goes to the stalls file as {@code <end epoch ms> <gap ms>}, as Weir's job writes them.
 *
 * <p>Arguments: keys checkpointIntervalMs checkpointFolder stallsFile backend(rocksdb|hashmap)
 */
public final class FlinkStateJob {
  /** A generated record. A Flink POJO. */
  public static final class Rec {
    public long seq;
    public String key;
    public int amount;

    public Rec() {}
  }

  /** The state per key. A Flink POJO. */
  public static final class Totals {
    public long count;
    public long sum;
    public long last;

    public Totals() {}
  }

  /** Records through the keyed function, published every 1024 (one subtask writes it). */
  static volatile long processed;

  static final class Accumulate extends KeyedProcessFunction<String, Rec, Void> {
    private final String stallsPath;
    private transient ValueState<Totals> totals;
    private transient FileWriter stalls;
    private transient long count;
    private transient long lastNanos;

    Accumulate(String stallsPath) {
      this.stallsPath = stallsPath;
    }

    @Override
    public void open(OpenContext context) throws IOException {
      totals = getRuntimeContext().getState(new ValueStateDescriptor<>("totals", TypeInformation.of(Totals.class)));
      stalls = new FileWriter(stallsPath, true);
    }

    @Override
    public void processElement(Rec rec, Context context, Collector<Void> out) throws IOException {
      long now = System.nanoTime();
      if (count == 0) System.out.println("first-record " + System.currentTimeMillis());
      else if (now - lastNanos >= 5_000_000L) {
        stalls.write(System.currentTimeMillis() + " " + (now - lastNanos) / 1e6 + "\n");
        stalls.flush();
      }
      lastNanos = now;
      Totals value = totals.value();
      if (value == null) value = new Totals();
      value.count++;
      value.sum += rec.amount;
      value.last = rec.seq;
      totals.update(value);
      if ((++count & 1023) == 0) processed = count;
    }

    @Override
    public void close() throws IOException {
      if (stalls != null) stalls.close();
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("arguments: keys checkpointIntervalMs checkpointFolder stallsFile backend(rocksdb|hashmap)");
      System.exit(2);
    }
    long keys = Long.parseLong(args[0]);
    long intervalMs = Long.parseLong(args[1]);
    File checkpoints = new File(args[2]).getAbsoluteFile();
    String stallsPath = args[3];
    String backend = args[4];

    Configuration config = new Configuration();
    config.set(StateBackendOptions.STATE_BACKEND, backend);
    config.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, backend.equals("rocksdb"));
    config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
    config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toURI().toString());
    config.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION, ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
    File latest = FlinkCountJob.latestCheckpoint(checkpoints);
    if (latest != null) {
      config.set(StateRecoveryOptions.SAVEPOINT_PATH, latest.toURI().toString());
      System.err.println("restoring from " + latest);
    }

    Thread reporter =
        new Thread(
            () -> {
              try {
                while (true) {
                  Thread.sleep(250);
                  System.out.println("processed " + System.currentTimeMillis() + " " + processed);
                }
              } catch (InterruptedException stop) {
                // the JVM exits
              }
            },
            "bench-reporter");
    reporter.setDaemon(true);
    reporter.start();

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
    env.setParallelism(1);
    env.enableCheckpointing(intervalMs, CheckpointingMode.EXACTLY_ONCE);

    DataGeneratorSource<Rec> source =
        new DataGeneratorSource<>(
            seq -> {
              Rec rec = new Rec();
              rec.seq = seq;
              rec.key = "key-" + (seq % keys);
              rec.amount = (int) (seq % 10) + 1;
              return rec;
            },
            Long.MAX_VALUE,
            RateLimiterStrategy.noOp(),
            TypeInformation.of(Rec.class));
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "generator")
        .uid("generator")
        .keyBy(rec -> rec.key)
        .process(new Accumulate(stallsPath))
        .uid("totals")
        .sinkTo(new DiscardingSink<>())
        .uid("discard");
    env.execute("weir-bench-flink-state");
  }
}
