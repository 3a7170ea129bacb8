package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerStatus;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.ListStatus;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.testkit.ConsumerFaults;
import dev.handoff.consumer.testkit.ConsumerTestKit;
import dev.handoff.outbox.ListFormat;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.RelayBuilder;
import dev.handoff.outbox.ShardId;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.StreamMessage;
import dev.handoff.outbox.Transport;
import dev.handoff.outbox.testkit.RelayFaults;
import dev.handoff.outbox.testkit.SimulatedCrash;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The demo: N payments through the whole chain (payment service, relay, two ledger consumers), with real faults
 * injected while it runs, then a replay of every message, an audit, and a naive consumer on the same stream for
 * contrast.
 *
 * <p>The faults are the ones the seed articles describe, made to happen for real (through handoff's test hooks,
 * which throw an {@link Error} that kills the thread at that exact point, as a crash would):
 * <ol>
 *   <li>a ledger consumer worker dies after its batch committed and before its XACK: the entries stay pending,
 *       another consumer claims them after {@code minIdle} and the inbox skips them as duplicates;
 *   <li>the relay dies after XADD and before marking its rows published: a second relay takes the lease when it
 *       expires and sends the rows again with the same stream IDs, which Redis refuses as already there;
 *   <li>one poison payment fails every delivery and is dead-lettered after {@code maxDeliveries};
 *   <li>both groups are set back to the start of their streams ({@code XGROUP SETID 0}): every message is
 *       delivered again.
 * </ol>
 * The naive consumer (no inbox) suffers the same crash and the same replay, and charges twice for each.
 *
 * <p>On the list transport ({@link Config#transport()}) the same faults, where they apply: the worker dies after its
 * commit and before its LREM, and its consumer stops as a killed process would (no more heartbeats), so another
 * consumer's reaper returns its processing lists to the head of the lists once the heartbeat TTL expires; the relay
 * dies after its RPUSH and before marking, and the second relay's push skips what is at or below the last-pushed
 * marker; the poison payment is dead-lettered. A list keeps nothing once acknowledged, so there is no history to
 * replay: instead every outbox message is pushed again onto its list with its original ID (what the relay does when
 * Redis lost data), and the ledger must skip each one. There is no naive contrast on lists: a list element goes to
 * one consumer, so a second group cannot read the same messages.
 */
public final class Demo {

  /** What the demo runs with. */
  public record Config(int payments, String schema, String keyPrefix, Duration minIdle, Duration leaseTtl,
      int maxDeliveries, Duration deadline, Transport transport, int listCapacity) {

    /** The list transport's capacity per shard in the demo: small enough that the outbox holds some backlog. */
    public static final int DEFAULT_LIST_CAPACITY = 1_000;

    public Config {
      if (payments < 10) {
        throw new IllegalArgumentException("--payments must be at least 10, was " + payments);
      }
      if (listCapacity < 1) {
        throw new IllegalArgumentException("--list-capacity must be at least 1, was " + listCapacity);
      }
    }

    public static Config of(int payments, String schema, String keyPrefix) {
      return of(payments, schema, keyPrefix, Transport.STREAM);
    }

    public static Config of(int payments, String schema, String keyPrefix, Transport transport) {
      return new Config(payments, schema, keyPrefix, Duration.ofSeconds(2), Duration.ofSeconds(1), 3,
          Duration.ofMinutes(3), transport, DEFAULT_LIST_CAPACITY);
    }

    public boolean lists() {
      return transport == Transport.LIST;
    }
  }

  /**
   * What happened.
   *
   * @param charged handled by the ledger consumers (a killed worker's last batch committed but never reported)
   * @param unreported charges committed by a worker that was killed before it could report them
   * @param replayed entries delivered again by the replay
   * @param streamEntries entries in the streams at the end
   * @param streamMessages distinct message IDs among them
   * @param firstDrain from the first payment until every payment was charged (before the replay)
   */
  public record Report(long payments, long poison, long charges, long charged, long unreported, long duplicates,
      long failed, long deadLettered, long reclaimed, long deadLetters, long replayed, long streamEntries,
      long streamMessages, long relayResent, Duration firstDrain, Duration elapsed, long naiveCharges,
      long naiveDoubleCharged, long naiveExtraCharges, long naiveCrashExtra, LedgerAudit.Result audit,
      boolean completed, Transport transport, long listCapacity) {

    /** Every delivery the ledger consumers settled. */
    public long deliveries() {
      return charged + unreported + duplicates + failed + deadLettered;
    }

    public double throughput() {
      return firstDrain.toNanos() == 0 ? 0 : payments * 1e9 / firstDrain.toNanos();
    }

    public boolean passed() {
      return completed && audit.passed();
    }

    public List<String> lines() {
      List<String> out = new ArrayList<>();
      out.add("");
      out.add("== report ==");
      out.add(row("payments", payments, poison + " poison"));
      out.add(row("charges", charges, "one per payment that is not poison"));
      out.add(row("deliveries", deliveries(), String.format("charged %,d + duplicates skipped %,d + failed %,d"
          + " + dead-lettered %,d + committed by the killed worker %,d", charged, duplicates, failed, deadLettered,
          unreported)));
      boolean lists = transport == Transport.LIST;
      if (lists) {
        out.add(row("duplicates skipped", duplicates, String.format("the inbox skipped them: %,d pushed again, the"
            + " rest returned after the crash", replayed)));
        out.add(row("reclaimed", reclaimed, "returned to the head of the lists by a reaper (a dead consumer's"
            + " processing lists)"));
      } else {
        out.add(row("duplicates skipped", duplicates, String.format("the inbox skipped them: %,d replayed, the rest"
            + " redelivered after the crash", replayed)));
        out.add(row("reclaimed", reclaimed, "claimed from a dead or backing-off consumer (XAUTOCLAIM)"));
      }
      out.add(row("dead letters", deadLetters, "the poison payment, after its last delivery"));
      out.add(String.format("%-20s %10.1fs  (%.1fs until every payment was charged)", "elapsed",
          elapsed.toMillis() / 1000.0, firstDrain.toMillis() / 1000.0));
      out.add(String.format("%-20s %,10.0f  payments/s end to end, faults included", "throughput", throughput()));
      if (lists) {
        out.add(row("list pushes", streamEntries, String.format("by the relays, for %,d outbox rows: relay-2 re-sent"
            + " %,d rows relay-1 had pushed, the push script skipped them (at or below the last-pushed marker)",
            streamMessages, relayResent)));
        out.add(row("list capacity", listCapacity, "per shard, waiting + in processing; the outbox held the rest"));
        out.add("");
        out.add("naive consumer: not run on lists. A list element goes to one consumer, so a second, naive group"
            + " cannot read the ledger's messages beside it (fan-out needs streams); run the demo with --transport"
            + " stream for the contrast.");
      } else {
        out.add(row("stream entries", streamEntries, String.format("%,d distinct messages: relay-2 re-sent %,d rows"
            + " relay-1 had added, Redis refused them as already there", streamMessages, relayResent)));
        out.add("");
        out.add(String.format("naive consumer (no inbox, same stream, same crash and replay): %,d charges for %,d"
            + " payments: %,d payments charged more than once, %,d extra charges (%,d after the crash between"
            + " commit and XACK, %,d from the replay)", naiveCharges, payments - poison, naiveDoubleCharged,
            naiveExtraCharges, naiveCrashExtra, naiveExtraCharges - naiveCrashExtra));
      }
      out.add("");
      out.addAll(audit.lines());
      if (!completed) {
        out.add("the demo did not finish within its deadline");
      }
      return out;
    }

    private static String row(String label, long n, String note) {
      return String.format("%-20s %,10d  %s", label, n, note);
    }
  }

  private final DataSource dataSource;
  private final UnifiedJedis redis;
  private final HostAndPort redisServer;
  private final JedisClientConfig redisConfig;
  private final Config config;
  private final PrintWriter out;
  private final long started = System.nanoTime();
  private final List<LedgerConsumer> ledgerConsumers = new ArrayList<>();
  private final AtomicLong relay1Written = new AtomicLong();
  private final AtomicLong relayResent = new AtomicLong();
  private final AtomicBoolean relayKilled = new AtomicBoolean();
  private final AtomicBoolean consumerKilled = new AtomicBoolean();
  private final AtomicBoolean naiveKilled = new AtomicBoolean();
  private final AtomicLong naiveChargedAtCrash = new AtomicLong(-1);
  private final AtomicLong paid = new AtomicLong();
  private final AtomicReference<Throwable> producerFailure = new AtomicReference<>();

  private Demo(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer, JedisClientConfig redisConfig,
      Config config, PrintWriter out) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.redisServer = redisServer;
    this.redisConfig = redisConfig;
    this.config = config;
    this.out = out;
  }

  /**
   * Runs the demo against a migrated schema that holds no payments yet, printing progress to {@code out}.
   *
   * @throws LedgerException if the schema or the streams already hold data
   */
  public static Report run(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, Config config, PrintWriter out) {
    return new Demo(dataSource, redis, redisServer, redisConfig, config, out).run();
  }

  private Report run() {
    requireFresh();
    int n = config.payments();
    long poisonAt = n / 2;
    PaymentService payments = new PaymentService(dataSource, config.schema());
    boolean lists = config.lists();
    String push = lists ? "RPUSH" : "XADD";
    String ack = lists ? "LREM" : "XACK";

    Relay relay1 = relay("relay-1", new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        long written = relay1Written.addAndGet(rows);
        if (written >= n / 2 && relayKilled.compareAndSet(false, true)) {
          relayResent.set(rows);
          event("FAULT relay-1 killed after %s of %,d rows of shard %s, before marking them published", push, rows,
              shard);
          throw new SimulatedCrash("relay killed after " + push);
        }
      }
    });
    LedgerConsumer a = ledger("ledger-a", point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT && charged() >= n / 4
          && consumerKilled.compareAndSet(false, true)) {
        event("FAULT ledger-a: worker %s killed after its batch committed, before %s: the batch stays %s, already"
            + " charged", Thread.currentThread().getName(), ack, lists ? "in its processing list" : "pending");
        throw new SimulatedCrash("consumer killed after commit");
      }
    });
    LedgerConsumer b = ledger("ledger-b");
    NaiveConsumer naive = lists ? null : new NaiveConsumer(dataSource, redis, config.schema(), config.keyPrefix(),
        NaiveConsumer.DEFAULT_GROUP, "naive", 2, 100, config.minIdle());
    if (naive != null) {
      naive.afterCommit(() -> {
        if (naive.charged() >= n / 4 && naiveKilled.compareAndSet(false, true)) {
          naiveChargedAtCrash.set(naive.charged());
          event("FAULT naive worker %s killed after its commit, before XACK", Thread.currentThread().getName());
          throw new SimulatedCrash("naive consumer killed after commit");
        }
      });
    }

    if (lists) {
      out.printf("demo: %,d payments (1 poison) on Redis lists (capacity %,d per shard, %d shards), relay-1,"
          + " consumers ledger-a and ledger-b (2 workers each); no naive consumer (a list element goes to one"
          + " consumer)%n", n, config.listCapacity(), PaymentEvents.SHARDS);
    } else {
      out.printf("demo: %,d payments (1 poison), relay-1, consumers ledger-a and ledger-b (2 workers each), and a"
          + " naive consumer on the same stream%n", n);
    }
    relay1.start();
    a.start();
    b.start();
    if (naive != null) {
      naive.start();
    }
    StreamConsumer ledgerProbe = lists ? null : probe(LedgerConsumer.DEFAULT_GROUP);
    StreamConsumer naiveProbe = lists ? null : probe(NaiveConsumer.DEFAULT_GROUP);
    ListConsumer listProbe = lists ? listProbe() : null;

    Thread producer = new Thread(() -> produce(payments, n, poisonAt), "ledger-demo-producer");
    long t0 = System.nanoTime();
    producer.start();
    Relay relay2 = null;
    boolean completed = true;
    Duration firstDrain;
    long replayed = 0;
    try {
      long nextProgress = System.nanoTime();
      long deadline = System.nanoTime() + config.deadline().toNanos();
      boolean consumerRestarted = false;
      while (true) {
        if (relayKilled.get() && relay2 == null) {
          relay1.close(Duration.ofMillis(100)); // its thread is dead: nothing drains, its leases stay until they expire
          relay2 = relay("relay-2");
          relay2.start();
          event("relay-2 started: it takes relay-1's shards when their leases expire (TTL %s)",
              seconds(config.leaseTtl()));
        }
        if (consumerKilled.get() && !consumerRestarted) {
          consumerRestarted = true;
          if (lists) {
            // A dead worker's consumer still beats for it: stop the whole consumer as a killed process stops.
            ConsumerTestKit.kill(a.listConsumer());
            a.close(Duration.ofSeconds(1));
            LedgerConsumer a2 = ledger("ledger-a2");
            a2.start();
            event("ledger-a's process dies with it: no more heartbeats, its processing lists stay; a reaper returns"
                + " them to the head of the lists when the heartbeat expires (TTL %s); ledger-a2 started",
                seconds(config.minIdle()));
          } else {
            a.close(Duration.ofSeconds(10));
            LedgerConsumer a2 = ledger("ledger-a2");
            a2.start();
            event("ledger-a replaced by ledger-a2: the dead worker's pending entries are claimed after minIdle"
                + " (%s)", seconds(config.minIdle()));
          }
        }
        if (System.nanoTime() >= nextProgress) {
          progress(naive);
          nextProgress += 1_000_000_000L;
        }
        if (producerFailure.get() != null) {
          throw new LedgerException("creating payments failed: " + producerFailure.get().getMessage(),
              producerFailure.get());
        }
        if (paid.get() == n && drained(ledgerProbe, listProbe, 1)
            && (naiveProbe == null || drained(naiveProbe, null, 0)) && unpublished() == 0) {
          break;
        }
        if (System.nanoTime() > deadline) {
          completed = false;
          break;
        }
        pause(100);
      }
      firstDrain = Duration.ofNanos(System.nanoTime() - t0);
      if (completed) {
        progress(naive);
        event("every payment is charged (%.1fs)", firstDrain.toMillis() / 1000.0);
        long duplicatesBefore = duplicates();
        if (lists) {
          event("REPLAY on lists: a list keeps nothing once acknowledged, so there is no history to set back to 0-0;"
              + " instead every outbox message is pushed again onto its list with its original ID (what the relay"
              + " does after Redis lost data)");
          replayed = repush();
          event("FAULT re-push: %,d messages pushed again; the ledger consumers take each one and must skip it",
              replayed);
        } else {
          replayed = replay();
          event("FAULT replay: both groups set back to 0-0; every retained message (%,d) is delivered again",
              replayed);
        }
        long replayDeadline = System.nanoTime() + config.deadline().toNanos();
        nextProgress = System.nanoTime() + 1_000_000_000L;
        while (!(drained(ledgerProbe, listProbe, 1) && (naiveProbe == null || drained(naiveProbe, null, 0))
            && (lists ? duplicates() - duplicatesBefore : duplicates()) >= replayed)) {
          if (System.nanoTime() > replayDeadline) {
            completed = false;
            break;
          }
          if (System.nanoTime() >= nextProgress) {
            progress(naive);
            nextProgress += 1_000_000_000L;
          }
          pause(100);
        }
        progress(naive);
      }
    } finally {
      producer.interrupt();
      for (LedgerConsumer c : ledgerConsumers) {
        c.close(Duration.ofSeconds(10));
      }
      if (naive != null) {
        naive.close(Duration.ofSeconds(10));
        ledgerProbe.close();
        naiveProbe.close();
      } else {
        listProbe.close();
      }
      if (relay2 != null) {
        relay2.close(Duration.ofSeconds(5));
      }
      relay1.close(Duration.ofMillis(100));
    }
    Duration elapsed = Duration.ofNanos(System.nanoTime() - t0);
    return report(firstDrain, elapsed, replayed, completed);
  }

  private Relay relay(String owner) {
    return relay(owner, RelayFaults.NONE);
  }

  private Relay relay(String owner, RelayFaults faults) {
    RelayBuilder builder = Relay.builder(dataSource, redis)
        .faults(faults)
        .schema(config.schema())
        .keyPrefix(config.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .owner(owner)
        .leaseTtl(config.leaseTtl())
        .idlePollInterval(Duration.ofMillis(200))
        .trimStreams(false) // the replay through the groups sees every message: the naive consumer double-charges all
        .drainTimeout(Duration.ofSeconds(5));
    if (config.lists()) {
      builder.listTransport(config.listCapacity());
    }
    return builder.build();
  }

  private LedgerConsumer ledger(String name) {
    return ledger(name, ConsumerFaults.NONE);
  }

  private LedgerConsumer ledger(String name, ConsumerFaults faults) {
    LedgerConsumer c = LedgerConsumer.builder(dataSource, redisServer)
        .faults(faults)
        .redisConfig(redisConfig)
        .schema(config.schema())
        .keyPrefix(config.keyPrefix())
        .transport(config.transport())
        .consumerName(name)
        .workers(2)
        .batchSize(100)
        .block(Duration.ofMillis(200))
        .minIdle(config.minIdle())
        .reclaimInterval(Duration.ofMillis(200))
        .maxDeliveries(config.maxDeliveries())
        .backoff(Duration.ofMillis(100), Duration.ofMillis(500))
        .build();
    ledgerConsumers.add(c);
    return c;
  }

  private StreamConsumer probe(String group) {
    return StreamConsumer.builder(dataSource, redisServer)
        .redisConfig(redisConfig)
        .schema(config.schema())
        .keyPrefix(config.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .group(group)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        })
        .build();
  }

  private ListConsumer listProbe() {
    return ListConsumer.builder(dataSource, redisServer)
        .redisConfig(redisConfig)
        .schema(config.schema())
        .keyPrefix(config.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .group(LedgerConsumer.DEFAULT_GROUP)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        })
        .build();
  }

  private void produce(PaymentService payments, int n, long poisonAt) {
    try {
      List<Payment> batch = new ArrayList<>(100);
      for (int i = 1; i <= n; i++) {
        batch.add(new Payment(String.format("pay-%06d", i), "acct-" + (i % 97 + 1), 100 + (i * 7919L) % 99_900,
            i == poisonAt));
        if (batch.size() == 100 || i == n) {
          payments.payAll(batch);
          paid.addAndGet(batch.size());
          batch.clear();
        }
      }
    } catch (RuntimeException e) {
      producerFailure.set(e);
    }
  }

  private boolean drained(StreamConsumer probe, ListConsumer listProbe, long deadLetters) {
    if (listProbe != null) {
      ListStatus s = listProbe.status();
      return s.drained() && s.deadLetters() == deadLetters;
    }
    ConsumerStatus s = probe.status();
    return s.drained() && s.deadLetters() == deadLetters && s.streams().stream().allMatch(x -> x.groupExists());
  }

  /**
   * Lists keep no history: pushes every outbox message of the topic again onto its list, with the ID the relay gave
   * it, in the order of those IDs. Returns how many were pushed.
   */
  private long repush() {
    long pushed = 0;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT id, message_id, shard, message_key, type, payload,"
            + " headers::text, created_at, stream_ms, stream_seq FROM " + config.schema() + ".outbox WHERE topic = ?"
            + " AND stream_ms IS NOT NULL ORDER BY stream_ms, stream_seq")) {
      c.setAutoCommit(false);
      ps.setFetchSize(1_000);
      ps.setString(1, PaymentEvents.TOPIC);
      try (ResultSet rs = ps.executeQuery()) {
        List<List<byte[]>> perShard = new ArrayList<>();
        for (int i = 0; i < PaymentEvents.SHARDS; i++) {
          perShard.add(new ArrayList<>());
        }
        while (rs.next()) {
          StreamMessage m = new StreamMessage(rs.getObject(2, java.util.UUID.class), rs.getLong(1),
              PaymentEvents.TOPIC, rs.getString(5), rs.getString(4),
              dev.handoff.outbox.internal.Json.readStringMap(rs.getString(7)),
              rs.getTimestamp(8).toInstant(), rs.getBytes(6));
          int shard = rs.getInt(3);
          perShard.get(shard).add(ListFormat.encode(rs.getLong(9) + "-" + rs.getLong(10), m));
          if (perShard.get(shard).size() == 500) {
            pushed += rpush(shard, perShard.get(shard));
          }
        }
        for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
          pushed += rpush(shard, perShard.get(shard));
        }
      }
      c.rollback();
    } catch (SQLException e) {
      throw new LedgerException("demo query failed: " + e.getMessage(), e);
    }
    return pushed;
  }

  private long rpush(int shard, List<byte[]> elements) {
    if (elements.isEmpty()) {
      return 0;
    }
    byte[] key = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard)
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    redis.rpush(key, elements.toArray(byte[][]::new));
    long n = elements.size();
    elements.clear();
    return n;
  }

  private long replay() {
    long entries = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      entries += redis.xlen(key);
      redis.xgroupSetID(key, LedgerConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0));
      redis.xgroupSetID(key, NaiveConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0));
    }
    return entries;
  }

  private long charged() {
    long sum = 0;
    for (LedgerConsumer c : List.copyOf(ledgerConsumers)) {
      sum += c.counters().handled();
    }
    return sum;
  }

  private long duplicates() {
    long sum = 0;
    for (LedgerConsumer c : List.copyOf(ledgerConsumers)) {
      sum += c.counters().duplicates();
    }
    return sum;
  }

  private void progress(NaiveConsumer naive) {
    long published = queryLong("SELECT count(*) FROM " + config.schema() + ".outbox WHERE published_at IS NOT NULL");
    long charges = queryLong("SELECT count(*) FROM " + config.schema() + ".charge WHERE ledger = ?",
        LedgerConsumer.DEFAULT_GROUP);
    long dup = duplicates();
    long reclaimed = 0;
    long dead = 0;
    for (LedgerConsumer c : List.copyOf(ledgerConsumers)) {
      reclaimed += c.counters().reclaimed();
      dead += c.counters().deadLettered();
    }
    if (naive == null) {
      long waiting = 0;
      long processing = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        String list = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
        waiting += redis.llen(list);
        for (String p : redis.hkeys(ListFormat.consumersKey(list))) {
          processing += redis.llen(p);
        }
      }
      event("paid %,d/%,d  published %,d  (lists: waiting %,d, in processing %,d)  charged %,d  duplicates skipped"
          + " %,d  reclaimed %,d  dead letters %d", paid.get(), config.payments(), published, waiting, processing,
          charges, dup, reclaimed, dead);
      return;
    }
    event("paid %,d/%,d  published %,d  charged %,d  duplicates skipped %,d  reclaimed %,d  dead letters %d"
        + "  | naive charges %,d", paid.get(), config.payments(), published, charges, dup, reclaimed, dead,
        naive.charged());
  }

  private long unpublished() {
    return queryLong("SELECT count(*) FROM " + config.schema() + ".outbox WHERE published_at IS NULL");
  }

  private Report report(Duration firstDrain, Duration elapsed, long replayed, boolean completed) {
    String s = config.schema();
    long payments = queryLong("SELECT count(*) FROM " + s + ".payment");
    long poison = queryLong("SELECT count(*) FROM " + s + ".payment WHERE poison");
    long charges = queryLong("SELECT count(*) FROM " + s + ".charge WHERE ledger = ?", LedgerConsumer.DEFAULT_GROUP);
    long deadLetters = queryLong("SELECT count(*) FROM " + s + ".dead_letter WHERE consumer_group = ? AND status"
        + " = 'dead'", LedgerConsumer.DEFAULT_GROUP);
    long handled = 0;
    long duplicates = 0;
    long failed = 0;
    long deadLettered = 0;
    long reclaimed = 0;
    for (LedgerConsumer c : ledgerConsumers) {
      handled += c.counters().handled();
      duplicates += c.counters().duplicates();
      failed += c.counters().failed();
      deadLettered += c.counters().deadLettered();
      reclaimed += c.counters().reclaimed();
    }
    long naiveCharges = queryLong("SELECT count(*) FROM " + s + ".charge WHERE ledger = ?",
        NaiveConsumer.DEFAULT_GROUP);
    long naiveDistinct = queryLong("SELECT count(DISTINCT payment_id) FROM " + s + ".charge WHERE ledger = ?",
        NaiveConsumer.DEFAULT_GROUP);
    long naiveDouble = queryLong("SELECT count(*) FROM (SELECT payment_id FROM " + s + ".charge WHERE ledger = ?"
        + " GROUP BY payment_id HAVING count(*) > 1) d", NaiveConsumer.DEFAULT_GROUP);
    long naiveFromReplay = completed ? Math.min(naiveCharges - naiveDistinct, payments - poison) : 0;
    long[] stream = config.lists() ? listCounts() : streamCounts();
    LedgerAudit.Result audit = LedgerAudit.audit(dataSource, s, LedgerConsumer.DEFAULT_GROUP);
    return new Report(payments, poison, charges, handled, Math.max(0, charges - handled), duplicates, failed,
        deadLettered, reclaimed, deadLetters, replayed, stream[0], stream[1], relayResent.get(), firstDrain, elapsed,
        naiveCharges, naiveDouble, naiveCharges - naiveDistinct, naiveCharges - naiveDistinct - naiveFromReplay,
        audit, completed, config.transport(), config.listCapacity());
  }

  /** Elements the relays pushed (the relay hashes' counts) and the outbox rows of the topic. */
  private long[] listCounts() {
    long pushed = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      String added = redis.hget(ListFormat.relayKey(list), "added");
      pushed += added == null ? 0 : Long.parseLong(added);
    }
    return new long[] {pushed, queryLong("SELECT count(*) FROM " + config.schema() + ".outbox WHERE topic = ?",
        PaymentEvents.TOPIC)};
  }

  private long[] streamCounts() {
    long entries = 0;
    Set<String> messages = new HashSet<>();
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      String after = "-";
      while (true) {
        List<StreamEntry> page = redis.xrange(key, after, "+", 1000);
        if (page.isEmpty()) {
          break;
        }
        for (StreamEntry e : page) {
          entries++;
          messages.add(e.getFields().get(StreamFormat.MESSAGE_ID));
        }
        after = "(" + page.get(page.size() - 1).getID();
      }
    }
    return new long[] {entries, messages.size()};
  }

  private void requireFresh() {
    long payments = queryLong("SELECT count(*) FROM " + config.schema() + ".payment");
    if (payments > 0) {
      throw new LedgerException("schema '" + config.schema() + "' already holds " + payments
          + " payments; the demo needs a fresh one (pass another --schema)");
    }
    if (LedgerStatus.listKeysExist(redis, config.keyPrefix())) {
      throw new LedgerException("Redis already holds the payments lists under prefix '" + config.keyPrefix()
          + "'; the demo needs fresh keys (pass another --key-prefix)");
    }
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      if (redis.exists(key)) {
        throw new LedgerException("Redis already holds stream '" + key + "'; the demo needs fresh keys (pass"
            + " another --key-prefix)");
      }
    }
  }

  private long queryLong(String sql, Object... params) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new LedgerException("demo query failed: " + e.getMessage(), e);
    }
  }

  private synchronized void event(String format, Object... args) {
    out.printf("%6.1fs  %s%n", (System.nanoTime() - started) / 1e9, String.format(format, args));
    out.flush();
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LedgerException("the demo was interrupted");
    }
  }
}
