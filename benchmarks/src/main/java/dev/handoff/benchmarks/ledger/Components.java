package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentService;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.Sql;
import dev.handoff.testing.tools.TimedLog;
import dev.handoff.relay.Relay;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Phase 1 of the benchmark: each component on a fixed backlog of {@code payments}, beside its baseline: raw producer
 * inserts and the payment service, a hand-written at-least-once relay loop, a raw pipelined XADD and the relay, a raw
 * batched insert of the consumer's marker and charge and the ledger consumer.
 */
record Components(LedgerServers servers, Bench.Config config, BenchFixtures fixtures, TimedLog log) {

  private interface TxBody {
    void run(Connection tx, List<Payment> batch) throws SQLException;
  }

  private interface Body {
    void run() throws Exception;
  }

  Bench.Parts measure() {
    Sql sql = fixtures.sql();
    String schema = fixtures.aux("parts");
    String prefix = fixtures.auxPrefix("parts");
    int n = config.payments();
    // The components are timed on tables holding only their backlog, as their baselines are.
    fixtures.prepareAux(schema, prefix, BenchFixtures.History.NONE);
    log.event("components: %,d payments, %d producer thread(s) x %d payment(s)/tx, %d worker(s) x batch %d, %d"
        + " shards", n, config.producers(), config.producerBatch(), config.workers(), config.batch(),
        config.shards());

    RawProducerBaseline rawInserts = new RawProducerBaseline(schema, config.shards());
    double rawProducer = produceFixed(n, "raw-", rawInserts::insert, null);
    sql.exec("TRUNCATE " + schema + ".payment, " + schema + ".outbox");
    log.event("  raw producer inserts (payment + outbox row, JDBC)   %,10.0f payments/s", rawProducer);

    PaymentService service = new PaymentService(servers.dataSource(), schema, config.topic());
    double producer = produceFixed(n, "p-", null, service);
    log.event("  payment service (payment + Outbox.appendAll)          %,10.0f payments/s  (%.0f%% of raw)",
        producer, 100 * producer / rawProducer);
    sql.exec("VACUUM ANALYZE " + schema + ".outbox");

    HandWrittenRelayLoop handWritten = new HandWrittenRelayLoop(servers.dataSource(), servers.redis(), schema,
        config.shards());
    double loop = timed(n, () -> handWritten.publishAll(prefix + "-loop"));
    fixtures.deleteKeys(prefix + "-loop:*");
    sql.exec("UPDATE " + schema + ".outbox SET published_at = NULL, stream_ms = NULL, stream_seq = NULL");
    sql.exec("VACUUM ANALYZE " + schema + ".outbox");
    log.event("  hand-written at-least-once relay loop                 %,10.0f rows/s", loop);

    RawXaddBaseline xadd = new RawXaddBaseline(servers.redis(), config.shards());
    double rawXadd = timed(n, () -> xadd.xadd(prefix + "-xadd", n));
    fixtures.deleteKeys(prefix + "-xadd:*");
    log.event("  raw pipelined XADD (1,000 per pipeline)                %,10.0f entries/s", rawXadd);

    double relayRate = relay(schema, prefix, n);
    log.event("  relay (relayOnce on a backlog)                         %,10.0f rows/s  (%.0f%% of the loop, %.0f%%"
        + " of raw XADD)", relayRate, 100 * relayRate / loop, 100 * relayRate / rawXadd);

    double consumerRate = ledgerConsumer(schema, prefix, n);
    double rawConsumer = new RawConsumerBaseline(servers.dataSource(), schema, config.workers(), config.batch())
        .run(n);
    log.event("  raw batched insert (inbox marker + charge, JDBC)       %,10.0f messages/s", rawConsumer);
    log.event("  ledger consumer (StreamConsumer + Ledger.charge)       %,10.0f messages/s  (%.0f%% of raw)",
        consumerRate, 100 * consumerRate / rawConsumer);
    fixtures.cleanUp(schema, prefix);
    return new Bench.Parts(n, rawProducer, producer, rawXadd, loop, relayRate, rawConsumer, consumerRate);
  }

  /** The relay publishing the whole backlog with {@code relayOnce}; rows per second. */
  private double relay(String schema, String prefix, int n) {
    Sql sql = fixtures.sql();
    // The component measurement keeps the default retention: its stream has no group yet when it is published.
    Relay relay = Relay.builder(servers.dataSource(), servers.redisSpec()).schema(schema).keyPrefix(prefix)
        .topic(config.topic()).owner("bench-parts").build();
    double rate = timed(n, () -> {
      while (sql.queryLong("SELECT count(*) FROM " + schema + ".outbox WHERE published_at IS NULL") > 0) {
        relay.relayOnce();
      }
    });
    relay.close(Duration.ofSeconds(5));
    return rate;
  }

  /** The ledger consumer charging the whole backlog; messages per second. */
  private double ledgerConsumer(String schema, String prefix, int n) {
    AtomicLong handled = new AtomicLong();
    AtomicLong firstHandledAt = new AtomicLong();
    LedgerConsumer consumer = config.ledgerConsumer(servers, schema, prefix, "bench-parts", new ConsumerListener() {
      @Override
      public void handled(InboundMessage m) {
        firstHandledAt.compareAndSet(0, System.nanoTime());
        handled.incrementAndGet();
      }
    });
    // Timed from the first charge to the last, like the raw baseline, which has no start-up either: starting
    // the consumer (groups, pools, threads) is not throughput.
    consumer.start();
    long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
    while (handled.get() < n) {
      if (System.nanoTime() > deadline) {
        throw new LedgerException("the consumer charged " + handled.get() + " of " + n + " in 5 minutes");
      }
      BenchThreads.pause(1);
    }
    double rate = n / ((System.nanoTime() - firstHandledAt.get()) / 1e9);
    consumer.close(Duration.ofSeconds(10));
    return rate;
  }

  private static double timed(long n, Body body) {
    long t0 = System.nanoTime();
    try {
      body.run();
    } catch (Exception e) {
      throw new LedgerException("benchmark phase failed: " + e, e);
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  /**
   * {@code n} payments from {@code producers} threads, {@code producerBatch} per transaction, written by
   * {@code raw} on a connection of each thread's own or, without it, by {@code service}; payments/s.
   */
  private double produceFixed(int n, String idPrefix, TxBody raw, PaymentService service) {
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int p = 0; p < config.producers(); p++) {
      Thread t = new Thread(() -> {
        try (Connection tx = raw != null ? servers.dataSource().getConnection() : null) {
          if (tx != null) {
            tx.setAutoCommit(false);
          }
          while (true) {
            long base = next.getAndAdd(config.producerBatch());
            if (base >= n) {
              return;
            }
            List<Payment> batch = BenchPayments.batch(idPrefix, base,
                (int) Math.min(config.producerBatch(), n - base));
            if (raw != null) {
              raw.run(tx, batch);
              tx.commit();
            } else {
              service.payAll(batch);
            }
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "bench-producer-" + p);
      threads.add(t);
      t.start();
    }
    BenchThreads.joinAll(threads);
    if (failure.get() != null) {
      throw new LedgerException("producer failed: " + failure.get(), failure.get());
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }
}
