package dev.handoff.ledger.demo;

import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import dev.handoff.relay.Relay;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import java.time.Duration;

/**
 * The demo from start to end: the cast starts with its faults armed, the payments go in, the demo polls (restarting
 * what the faults kill, printing progress) until every payment is charged, replays every message, waits until the
 * ledger has skipped each one again, closes everything and counts.
 */
record DemoScript(LedgerServers servers, Demo.Config config, TimedLog log, DemoTally tally) {

  private static final long SECOND = 1_000_000_000L;

  Demo.Report run() {
    int n = config.payments();
    DemoCast cast = new DemoCast(servers, config);
    DemoFaults faults = new DemoFaults(cast, config, log);
    Relay relay1 = cast.relay("relay-1", faults.relay1Crash());
    LedgerConsumer ledgerA = cast.ledger("ledger-a", faults.ledgerACrash());
    LedgerConsumer ledgerB = cast.ledger("ledger-b");
    NaiveConsumer naive = cast.naive();
    if (naive != null) {
      faults.naiveCrash(naive);
    }
    announce();
    relay1.start();
    ledgerA.start();
    ledgerB.start();
    if (naive != null) {
      naive.start();
    }
    DemoProbes probes = new DemoProbes(servers, config);
    DemoProducer producer = new DemoProducer(new PaymentService(servers.dataSource(), config.schema()), n);
    DemoProgress progress = new DemoProgress(servers.redis(), config, tally.sql(), cast, producer, log);

    long t0 = System.nanoTime();
    producer.start();
    boolean completed;
    Duration firstDrain;
    long replayed = 0;
    try {
      completed = untilCharged(producer, probes, faults, relay1, ledgerA, () -> progress.print(naive));
      firstDrain = Duration.ofNanos(System.nanoTime() - t0);
      if (completed) {
        progress.print(naive);
        log.event("every payment is charged (%.1fs)", firstDrain.toMillis() / 1000.0);
        long duplicatesBefore = cast.totals().duplicates();
        replayed = new DemoReplay(servers, config, log).run();
        completed = untilSkippedAgain(probes, cast, replayed, config.lists() ? duplicatesBefore : 0,
            () -> progress.print(naive));
        progress.print(naive);
      }
    } finally {
      producer.interrupt();
      cast.closeLedgers();
      if (naive != null) {
        naive.close(Duration.ofSeconds(10));
      }
      probes.close();
      faults.closeRestartedRelay();
      relay1.close(Duration.ofMillis(100));
    }
    Duration elapsed = Duration.ofNanos(System.nanoTime() - t0);
    return tally.report(firstDrain, elapsed, replayed, completed, cast.totals(), faults.relayResent());
  }

  private void announce() {
    if (config.lists()) {
      log.printf("demo: %,d payments (1 poison) on Redis lists (capacity %,d per shard, %d shards), relay-1,"
          + " consumers ledger-a and ledger-b (2 workers each); no naive consumer (a list element goes to one"
          + " consumer)%n", config.payments(), config.listCapacity(), PaymentEvents.SHARDS);
    } else {
      log.printf("demo: %,d payments (1 poison), relay-1, consumers ledger-a and ledger-b (2 workers each), and a"
          + " naive consumer on the same stream%n", config.payments());
    }
  }

  /**
   * Polls until every payment is paid, published and charged (the poison one dead-lettered), restarting what the
   * faults kill; false if the deadline passed first.
   */
  private boolean untilCharged(DemoProducer producer, DemoProbes probes, DemoFaults faults, Relay relay1,
      LedgerConsumer ledgerA, Runnable progress) {
    long nextProgress = System.nanoTime();
    long deadline = System.nanoTime() + config.deadline().toNanos();
    while (true) {
      faults.restartTheKilled(relay1, ledgerA);
      if (System.nanoTime() >= nextProgress) {
        progress.run();
        nextProgress += SECOND;
      }
      if (producer.failure() != null) {
        throw new LedgerException("creating payments failed: " + producer.failure().getMessage(),
            producer.failure());
      }
      if (producer.paid() == config.payments() && probes.drained() && tally.unpublished() == 0) {
        return true;
      }
      if (System.nanoTime() > deadline) {
        return false;
      }
      pause(100);
    }
  }

  /**
   * Polls until the consumers are drained again and the ledger skipped every replayed message as a duplicate
   * (counted from {@code duplicatesBefore}); false if the deadline passed first.
   */
  private boolean untilSkippedAgain(DemoProbes probes, DemoCast cast, long replayed, long duplicatesBefore,
      Runnable progress) {
    long deadline = System.nanoTime() + config.deadline().toNanos();
    long nextProgress = System.nanoTime() + SECOND;
    while (!(probes.drained() && cast.totals().duplicates() - duplicatesBefore >= replayed)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      if (System.nanoTime() >= nextProgress) {
        progress.run();
        nextProgress += SECOND;
      }
      pause(100);
    }
    return true;
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
