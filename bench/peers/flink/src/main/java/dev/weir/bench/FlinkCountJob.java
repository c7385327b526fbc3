package dev.weir.bench;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.serialization.AbstractDeserializationSchema;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The benchmark's job on Apache Flink 2.0, local execution: read (KafkaSource, read_committed),
 * parse (JSON, Jackson), keyBy, running count per key (ValueState, the default hashmap state
 * backend), write (KafkaSink, EXACTLY_ONCE). Checkpoints go to a folder and are retained, and a
 * start resumes from the newest complete one there (execution.state-recovery.path), so that a
 * SIGKILLed process restarted with the same arguments carries on exactly once.
 *
 * <p>Arguments: bootstrap input output parallelism checkpointIntervalMs checkpointFolder
 * transactionalIdPrefix groupId
 */
public final class FlinkCountJob {
  static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /** An input record: {"seq":..., "key":"...", "ts":...}. A Flink POJO. */
  public static final class In {
    public long seq;
    public String key;
    public long ts;

    public In() {}
  }

  /** An output record: the input's fields and the key's running count. A Flink POJO. */
  public static final class Out {
    public long seq;
    public String key;
    public long ts;
    public long count;

    public Out() {}

    Out(In in, long count) {
      this.seq = in.seq;
      this.key = in.key;
      this.ts = in.ts;
      this.count = count;
    }
  }

  static final class ParseJson extends AbstractDeserializationSchema<In> {
    @Override
    public In deserialize(byte[] message) throws IOException {
      return JSON.readValue(message, In.class);
    }
  }

  static final class KeyBytes implements SerializationSchema<Out> {
    @Override
    public byte[] serialize(Out out) {
      return out.key.getBytes(StandardCharsets.UTF_8);
    }
  }

  static final class ToJson implements SerializationSchema<Out> {
    @Override
    public byte[] serialize(Out out) {
      try {
        return JSON.writeValueAsBytes(out);
      } catch (IOException error) {
        throw new UncheckedIOException(error);
      }
    }
  }

  static final class CountPerKey extends KeyedProcessFunction<String, In, Out> {
    private transient ValueState<Long> count;

    @Override
    public void open(OpenContext context) {
      count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
    }

    @Override
    public void processElement(In in, Context context, Collector<Out> out) throws IOException {
      Long previous = count.value();
      long next = previous == null ? 1 : previous + 1;
      count.update(next);
      out.collect(new Out(in, next));
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 8) {
      System.err.println("arguments: bootstrap input output parallelism checkpointIntervalMs checkpointFolder transactionalIdPrefix groupId");
      System.exit(2);
    }
    String bootstrap = args[0];
    String input = args[1];
    String output = args[2];
    int parallelism = Integer.parseInt(args[3]);
    long intervalMs = Long.parseLong(args[4]);
    File checkpoints = new File(args[5]).getAbsoluteFile();
    String transactionalIdPrefix = args[6];
    String groupId = args[7];

    Configuration config = new Configuration();
    config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
    config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toURI().toString());
    config.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION, ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
    File latest = latestCheckpoint(checkpoints);
    if (latest != null) {
      config.set(StateRecoveryOptions.SAVEPOINT_PATH, latest.toURI().toString());
      System.err.println("restoring from " + latest);
    }

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
    env.setParallelism(parallelism);
    env.enableCheckpointing(intervalMs, CheckpointingMode.EXACTLY_ONCE);

    KafkaSource<In> source =
        KafkaSource.<In>builder()
            .setBootstrapServers(bootstrap)
            .setTopics(input)
            .setGroupId(groupId)
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setValueOnlyDeserializer(new ParseJson())
            // KafkaSource leaves isolation.level at the client default (read_uncommitted).
            .setProperty("isolation.level", "read_committed")
            .build();

    KafkaSink<Out> sink =
        KafkaSink.<Out>builder()
            .setBootstrapServers(bootstrap)
            .setRecordSerializer(
                KafkaRecordSerializationSchema.<Out>builder()
                    .setTopic(output)
                    .setKeySerializationSchema(new KeyBytes())
                    .setValueSerializationSchema(new ToJson())
                    .build())
            .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .setTransactionalIdPrefix(transactionalIdPrefix)
            // The sink's default (1 h) is above a default broker's transaction.max.timeout.ms (15 min).
            .setProperty("transaction.timeout.ms", String.valueOf(Duration.ofMinutes(15).toMillis()))
            .build();

    env.fromSource(source, WatermarkStrategy.noWatermarks(), "input")
        .uid("input")
        .keyBy(in -> in.key)
        .process(new CountPerKey())
        .uid("count")
        .sinkTo(sink)
        .uid("output");
    env.execute("weir-bench-flink");
  }

  /** The newest complete checkpoint (a chk-N folder with _metadata) under any job's folder, or null. */
  static File latestCheckpoint(File root) {
    File best = null;
    long bestTime = -1;
    File[] jobs = root.listFiles(File::isDirectory);
    if (jobs == null) return null;
    for (File job : jobs) {
      File[] chks = job.listFiles((dir, name) -> name.startsWith("chk-"));
      if (chks == null) continue;
      for (File chk : chks) {
        File metadata = new File(chk, "_metadata");
        if (metadata.isFile() && metadata.lastModified() > bestTime) {
          best = chk;
          bestTime = metadata.lastModified();
        }
      }
    }
    return best;
  }
}
