package dev.handoff.ledger.demo;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.Ledger;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testkit.SimulatedCrash;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.XAutoClaimParams;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The same effect as {@link LedgerConsumer} without an inbox, for contrast: read a batch ({@code XREADGROUP}),
 * charge it in one transaction, commit, {@code XACK}. It is a correct at-least-once consumer (it replays its own
 * pending entries on start and claims abandoned ones with {@code XAUTOCLAIM}), and that is exactly why it charges
 * twice: every redelivery of an entry it had already charged (a crash between commit and XACK, a replay) books
 * another charge with the same message ID. Poison payments are dropped silently. Thread-safe.
 */
public final class NaiveConsumer implements AutoCloseable {

  /** The default consumer group, also the {@code charge.ledger} it books into. */
  public static final String DEFAULT_GROUP = "naive";

  private static final Logger log = LoggerFactory.getLogger(NaiveConsumer.class);
  private static final Duration BLOCK = Duration.ofMillis(500);
  private static final long RECLAIM_INTERVAL_MILLIS = 500;

  private final DataSource dataSource;
  private final UnifiedJedis redis;
  private final Ledger ledger;
  private final String group;
  private final String consumerName;
  private final int workers;
  private final int batchSize;
  private final Duration minIdle;
  private final List<String> streamKeys = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private final CountDownLatch stopping = new CountDownLatch(1);
  private final AtomicReference<Runnable> afterCommit = new AtomicReference<>(() -> {});
  private final AtomicLong deliveries = new AtomicLong();
  private final AtomicLong charged = new AtomicLong();
  private final AtomicLong reclaimed = new AtomicLong();

  /**
   * @param redis a pooled client whose socket timeout exceeds 500 ms (reads block that long)
   * @param consumerName the base of the workers' consumer names ({@code <name>-<i>}); reuse it after a restart to
   *     replay the pending entries at once
   */
  public NaiveConsumer(DataSource dataSource, UnifiedJedis redis, String schema, String keyPrefix, String group,
      String consumerName, int workers, int batchSize, Duration minIdle) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.ledger = new Ledger(schema, group);
    this.group = group;
    this.consumerName = consumerName;
    this.workers = workers;
    this.batchSize = batchSize;
    this.minIdle = minIdle;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      streamKeys.add(StreamFormat.streamKey(keyPrefix, PaymentEvents.TOPIC, shard));
    }
  }

  /** For the demo: runs after each batch committed and before its XACK; throwing an Error kills the worker. */
  public void afterCommit(Runnable hook) {
    afterCommit.set(hook);
  }

  /** Creates the group from the beginning of every shard (if missing) and starts the workers. */
  public void start() {
    for (String key : streamKeys) {
      try {
        redis.xgroupCreate(key, group, new StreamEntryID(0, 0), true);
      } catch (JedisDataException e) {
        if (e.getMessage() == null || !e.getMessage().startsWith("BUSYGROUP")) {
          throw e;
        }
      }
    }
    for (int i = 0; i < workers; i++) {
      String name = consumerName + "-" + i;
      Thread t = new Thread(() -> run(name), "ledger-naive-" + name);
      t.setDaemon(true);
      // The demo kills these threads on purpose: one line for that, the whole trace for anything else.
      t.setUncaughtExceptionHandler((thread, e) -> {
        if (e instanceof SimulatedCrash) {
          log.warn("naive consumer: {} stopped by a {}", thread.getName(), e.getMessage());
        } else {
          log.error("naive consumer: {} died", thread.getName(), e);
        }
      });
      threads.add(t);
      t.start();
    }
  }

  public long deliveries() {
    return deliveries.get();
  }

  public long charged() {
    return charged.get();
  }

  public long reclaimed() {
    return reclaimed.get();
  }

  public String group() {
    return group;
  }

  /** Stops the workers (each finishes its batch) within {@code deadline}. */
  public boolean close(Duration deadline) {
    stopping.countDown();
    long end = System.nanoTime() + deadline.toNanos();
    boolean clean = true;
    for (Thread t : threads) {
      try {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      clean &= !t.isAlive();
    }
    return clean;
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }

  /**
   * New entries of every shard: one XREADGROUP for all on one server; on a cluster, where one command cannot span
   * the shards' slots, one per shard without blocking, then a short block on the first.
   */
  private List<Entry> readNew(String name) {
    int count = Math.max(1, batchSize / streamKeys.size());
    if (!(redis instanceof RedisClusterClient)) {
      Map<String, StreamEntryID> streams = new LinkedHashMap<>();
      for (String key : streamKeys) {
        streams.put(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY);
      }
      return entries(redis.xreadGroup(group, name, XReadGroupParams.xReadGroupParams().count(count)
          .block((int) BLOCK.toMillis()), streams));
    }
    List<Entry> batch = new ArrayList<>();
    for (String key : streamKeys) {
      batch.addAll(entries(redis.xreadGroup(group, name, XReadGroupParams.xReadGroupParams().count(count),
          Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY))));
    }
    if (batch.isEmpty()) {
      batch.addAll(entries(redis.xreadGroup(group, name, XReadGroupParams.xReadGroupParams().count(count)
          .block(100), Map.of(streamKeys.get(0), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY))));
    }
    return batch;
  }

  private void run(String name) {
    Map<String, StreamEntryID> cursors = new HashMap<>();
    long nextReclaim = 0;
    try {
      // An at-least-once consumer first finishes what it was handed before a restart.
      for (String key : streamKeys) {
        while (stopping.getCount() > 0) {
          List<Map.Entry<String, List<StreamEntry>>> own = redis.xreadGroup(group, name,
              XReadGroupParams.xReadGroupParams().count(batchSize), Map.of(key, new StreamEntryID(0, 0)));
          List<Entry> batch = entries(own);
          if (batch.isEmpty()) {
            break;
          }
          settle(batch);
        }
      }
      while (stopping.getCount() > 0) {
        try {
          List<Entry> batch = new ArrayList<>();
          if (System.currentTimeMillis() >= nextReclaim) {
            nextReclaim = System.currentTimeMillis() + RECLAIM_INTERVAL_MILLIS;
            for (String key : streamKeys) {
              Map.Entry<StreamEntryID, List<StreamEntry>> claimed = redis.xautoclaim(key, group, name,
                  minIdle.toMillis(), cursors.getOrDefault(key, new StreamEntryID(0, 0)),
                  XAutoClaimParams.xAutoClaimParams().count(batchSize));
              cursors.put(key, claimed.getKey());
              for (StreamEntry e : claimed.getValue()) {
                if (e != null && e.getFields() != null) {
                  batch.add(new Entry(key, e));
                }
              }
            }
            reclaimed.addAndGet(batch.size());
          }
          if (batch.isEmpty()) {
            batch = readNew(name);
          }
          if (!batch.isEmpty()) {
            settle(batch);
          }
        } catch (SQLException | RuntimeException e) {
          log.warn("naive consumer {}: {}; retrying", name, e.toString());
          stopping.await(200 + ThreadLocalRandom.current().nextInt(200), TimeUnit.MILLISECONDS);
        }
      }
    } catch (SQLException | RuntimeException e) {
      log.warn("naive consumer {} stopped: {}", name, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void settle(List<Entry> batch) throws SQLException {
    List<PaymentEvents.Charged> charges = new ArrayList<>(batch.size());
    for (Entry e : batch) {
      Map<String, String> f = e.entry.getFields();
      charges.add(PaymentEvents.read(f.get(StreamFormat.PAYLOAD), UUID.fromString(f.get(StreamFormat.MESSAGE_ID))));
    }
    int n;
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try {
        n = ledger.chargeSkippingPoison(tx, charges);
        tx.commit();
      } catch (SQLException | RuntimeException ex) {
        tx.rollback();
        throw ex;
      }
    }
    deliveries.addAndGet(batch.size());
    charged.addAndGet(n);
    afterCommit.get().run();
    Map<String, List<StreamEntryID>> acks = new HashMap<>();
    for (Entry e : batch) {
      acks.computeIfAbsent(e.key, k -> new ArrayList<>()).add(e.entry.getID());
    }
    acks.forEach((key, ids) -> redis.xack(key, group, ids.toArray(StreamEntryID[]::new)));
  }

  private static List<Entry> entries(List<Map.Entry<String, List<StreamEntry>>> reply) {
    List<Entry> out = new ArrayList<>();
    if (reply == null) {
      return out;
    }
    for (Map.Entry<String, List<StreamEntry>> stream : reply) {
      for (StreamEntry e : stream.getValue()) {
        if (e != null && e.getFields() != null) {
          out.add(new Entry(stream.getKey(), e));
        }
      }
    }
    return out;
  }

  private record Entry(String key, StreamEntry entry) {}
}
