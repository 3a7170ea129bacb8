package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.PaymentEvents;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The raw pipeline's consumers, with no handoff code: {@code workers} threads, each owning the shards {@code s} with
 * {@code s % workers == w}; XREADGROUP, then the inbox markers and charges of the batch in one transaction, commit,
 * then XACK. No retries, no claiming, no dead letters: a failure ends the run.
 */
final class RawConsumerLoop {

  static final String GROUP = "raw";

  private final DataSource dataSource;
  private final UnifiedJedis redis;
  private final String schema;
  private final String prefix;
  private final int shards;
  private final int workers;
  private final int batch;
  private final Timings timings;
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong charged = new AtomicLong();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final List<Thread> threads = new ArrayList<>();

  /** @param batch entries per transaction at most, spread over the worker's streams */
  RawConsumerLoop(DataSource dataSource, UnifiedJedis redis, String schema, String prefix, int shards, int workers,
      int batch, Timings timings) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.schema = schema;
    this.prefix = prefix;
    this.shards = shards;
    this.workers = workers;
    this.batch = batch;
    this.timings = timings;
  }

  /** Creates the group on every stream (and the streams), from the start. */
  void createGroups() {
    for (int s = 0; s < shards; s++) {
      redis.xgroupCreate(key(s), GROUP, new StreamEntryID(0, 0), true);
    }
  }

  void start() {
    for (int w = 0; w < workers; w++) {
      Map<String, StreamEntryID> streams = new LinkedHashMap<>();
      for (int s = w; s < shards; s += workers) {
        streams.put(key(s), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY);
      }
      if (streams.isEmpty()) {
        continue;
      }
      String consumer = "raw-" + w;
      threads.add(new Thread(() -> consume(consumer, streams), "bench-raw-consumer-" + w));
    }
    threads.forEach(Thread::start);
  }

  /** Stops after the current read (at most the block time) and waits for the threads. */
  void stop() {
    running.set(false);
    BenchThreads.joinAll(threads);
  }

  long commits() {
    return commits.get();
  }

  long charged() {
    return charged.get();
  }

  Throwable failure() {
    return failure.get();
  }

  private void consume(String consumer, Map<String, StreamEntryID> streams) {
    // COUNT applies per stream: split the batch over the worker's streams so that a transaction holds at most batch.
    XReadGroupParams read = XReadGroupParams.xReadGroupParams().count(Math.max(1, batch / streams.size()))
        .block(500);
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      while (running.get()) {
        List<Map.Entry<String, List<StreamEntry>>> reply = redis.xreadGroup(GROUP, consumer, read, streams);
        if (reply == null) {
          continue;
        }
        List<StreamEntry> entries = new ArrayList<>();
        reply.forEach(e -> entries.addAll(e.getValue()));
        if (entries.isEmpty()) {
          continue;
        }
        int n = entries.size();
        UUID[] ids = new UUID[n];
        String[] streamIds = new String[n];
        String[] paymentIds = new String[n];
        Long[] amounts = new Long[n];
        for (int i = 0; i < n; i++) {
          Map<String, String> f = entries.get(i).getFields();
          ids[i] = UUID.fromString(f.get(RawRelayLoop.MESSAGE_ID));
          streamIds[i] = entries.get(i).getID().toString();
          paymentIds[i] = f.get(RawRelayLoop.KEY);
          amounts[i] = amountCents(f.get(RawRelayLoop.PAYLOAD));
        }
        RawConsumerBaseline.write(tx, schema, GROUP, ids, streamIds, paymentIds, amounts);
        tx.commit();
        long now = System.nanoTime();
        commits.incrementAndGet();
        for (String paymentId : paymentIds) {
          long seq = BenchPayments.seqOf(paymentId);
          if (seq >= 0) {
            timings.charged(seq, now);
          }
        }
        charged.addAndGet(n);
        for (Map.Entry<String, List<StreamEntry>> e : reply) {
          if (!e.getValue().isEmpty()) {
            redis.xack(e.getKey(), GROUP, e.getValue().stream().map(StreamEntry::getID).toArray(StreamEntryID[]::new));
          }
        }
      }
    } catch (SQLException | RuntimeException e) {
      failure.compareAndSet(null, e);
    }
  }

  private String key(int shard) {
    return StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, shard);
  }

  /** The amount from the payment's JSON payload, as {@link BenchPayments#payload} writes it. */
  static long amountCents(String payload) {
    String field = "\"amount_cents\":";
    int at = payload.indexOf(field) + field.length();
    int end = at;
    while (end < payload.length() && Character.isDigit(payload.charAt(end))) {
      end++;
    }
    return Long.parseLong(payload.substring(at, end));
  }
}
