package dev.weir.bench;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The benchmark's job on Kafka Streams 4.1 with exactly_once_v2: read, parse (JSON, Jackson), running
 * count per key in a key-value store (Streams' default persistent store, RocksDB, with its changelog),
 * write. The input is keyed by the count's key (every key in one partition), so Streams needs no
 * repartition topic: its keyBy is the input's partitioning, as the Streams docs prescribe for
 * co-partitioned input. The store is used through the Processor API, which emits one update per
 * input record like the other systems (the DSL's count() would cache and compact updates).
 *
 * <p>Arguments: bootstrap input output threads commitIntervalMs stateDir applicationId
 */
public final class StreamsCountJob {
  static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /** An input record: {"seq":..., "key":"...", "ts":...}. */
  public static final class In {
    public long seq;
    public String key;
    public long ts;

    public In() {}
  }

  /** An output record: the input's fields and the key's running count. */
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

  static final class CountPerKey implements Processor<String, byte[], String, byte[]> {
    private ProcessorContext<String, byte[]> context;
    private KeyValueStore<String, Long> counts;

    @Override
    public void init(ProcessorContext<String, byte[]> context) {
      this.context = context;
      this.counts = context.getStateStore("counts");
    }

    @Override
    public void process(Record<String, byte[]> record) {
      try {
        In in = JSON.readValue(record.value(), In.class);
        Long previous = counts.get(in.key);
        long next = previous == null ? 1 : previous + 1;
        counts.put(in.key, next);
        context.forward(record.withKey(in.key).withValue(JSON.writeValueAsBytes(new Out(in, next))));
      } catch (IOException error) {
        throw new UncheckedIOException(error);
      }
    }
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 7) {
      System.err.println("arguments: bootstrap input output threads commitIntervalMs stateDir applicationId");
      System.exit(2);
    }
    String input = args[1];
    String output = args[2];

    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[6]);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args[4]));
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[3]));
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
    // Static membership (KIP-345): a restarted instance takes its place in the group back without
    // waiting for the killed one's session to expire (45 s), as recommended for stateful apps.
    props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args[6] + "-instance");

    StreamsBuilder builder = new StreamsBuilder();
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("counts"), Serdes.String(), Serdes.Long()));
    builder
        .stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()))
        .process(CountPerKey::new, "counts")
        .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close();
                  closed.countDown();
                }));
    streams.setStateListener(
        (next, previous) -> {
          System.err.println("state " + previous + " -> " + next);
          if (next == KafkaStreams.State.ERROR || next == KafkaStreams.State.NOT_RUNNING) closed.countDown();
        });
    streams.start();
    closed.await();
  }
}
