package dev.handoff.ledger.demo;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.core.ShardId;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayFaults;
import dev.handoff.testing.tools.TimedLog;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.KillSwitch;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The demo's crashes, each once, and the restarts an operator would make after them: relay-1 dies between its
 * write to Redis and its mark, and relay-2 is started; a ledger-a worker dies between its commit and its
 * acknowledgement, and ledger-a2 replaces ledger-a; a naive worker dies at the same point and is not replaced.
 */
final class DemoFaults {

  private final DemoCast cast;
  private final Demo.Config config;
  private final TimedLog log;
  private final String push;
  private final String ack;
  private final AtomicLong relay1Written = new AtomicLong();
  private final AtomicLong relayResent = new AtomicLong();
  private final AtomicBoolean relayKilled = new AtomicBoolean();
  private final AtomicBoolean consumerKilled = new AtomicBoolean();
  private final AtomicBoolean naiveKilled = new AtomicBoolean();
  private Relay relay2;
  private boolean consumerRestarted;
  private KillSwitch ledgerAProcess;

  DemoFaults(DemoCast cast, Demo.Config config, TimedLog log) {
    this.cast = cast;
    this.config = config;
    this.log = log;
    this.push = config.lists() ? "RPUSH" : "XADD";
    this.ack = config.lists() ? "LREM" : "XACK";
  }

  /** Kills relay-1 once half the payments are written to Redis, before it marks the last of them published. */
  RelayFaults relay1Crash() {
    return new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        long written = relay1Written.addAndGet(rows);
        if (written >= config.payments() / 2 && relayKilled.compareAndSet(false, true)) {
          relayResent.set(rows);
          log.event("FAULT relay-1 killed after %s of %,d rows of shard %s, before marking them published", push,
              rows, shard);
          throw new SimulatedCrash("relay killed after " + push);
        }
      }
    };
  }

  /**
   * Kills ledger-a's process, as far as one worker can tell, after a commit, once a quarter of the payments are
   * charged: the worker stops right there, alive but doing nothing more (so its consumer does not replace it, as no
   * consumer of a dead process would), until ledger-a is stopped; then the thread dies without acknowledging.
   */
  ConsumerFaults ledgerACrash() {
    ConsumerFaults crash = point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT && cast.charged() >= config.payments() / 4
          && consumerKilled.compareAndSet(false, true)) {
        log.event("FAULT ledger-a: worker %s killed after its batch committed, before %s: the batch stays %s,"
            + " already charged", Thread.currentThread().getName(), ack, config.lists() ? "in its processing list"
            : "pending");
        while (!Thread.currentThread().isInterrupted()) {
          LockSupport.park(this);
        }
        throw new SimulatedCrash("consumer killed after commit");
      }
    };
    ledgerAProcess = ConsumerTestKit.killSwitch(crash);
    return ledgerAProcess;
  }

  /** Kills a worker of {@code naive} after a commit, once it charged a quarter of the payments. */
  void naiveCrash(NaiveConsumer naive) {
    naive.afterCommit(() -> {
      if (naive.charged() >= config.payments() / 4 && naiveKilled.compareAndSet(false, true)) {
        log.event("FAULT naive worker %s killed after its commit, before XACK", Thread.currentThread().getName());
        throw new SimulatedCrash("naive consumer killed after commit");
      }
    });
  }

  /** Rows relay-2 sent again because relay-1 died before marking them. */
  long relayResent() {
    return relayResent.get();
  }

  /** Starts what replaces a killed relay or consumer, once each; called as the demo polls. */
  void restartTheKilled(Relay relay1, LedgerConsumer ledgerA) {
    if (relayKilled.get() && relay2 == null) {
      relay1.close(Duration.ofMillis(100)); // its thread is dead: nothing drains, its leases stay until they expire
      relay2 = cast.relay("relay-2");
      relay2.start();
      log.event("relay-2 started: it takes relay-1's shards when their leases expire (TTL %s)",
          seconds(config.leaseTtl()));
    }
    if (consumerKilled.get() && !consumerRestarted) {
      consumerRestarted = true;
      if (config.lists()) {
        // The stopped worker's consumer still beats for it: stop the whole consumer as a killed process stops.
        ledgerAProcess.kill();
        ledgerA.close(Duration.ofSeconds(1));
        cast.ledger("ledger-a2").start();
        log.event("ledger-a's process dies with it: no more heartbeats, its processing lists stay; a reaper returns"
            + " them to the head of the lists when the heartbeat expires (TTL %s); ledger-a2 started",
            seconds(config.minIdle()));
      } else {
        // A dead process's consumer has nothing left to drain: the stopped worker's batch stays pending.
        ledgerA.close(Duration.ofMillis(100));
        cast.ledger("ledger-a2").start();
        log.event("ledger-a replaced by ledger-a2: the dead worker's pending entries are claimed after minIdle (%s)",
            seconds(config.minIdle()));
      }
    }
  }

  /** Closes relay-2, if it was started. */
  void closeRestartedRelay() {
    if (relay2 != null) {
      relay2.close(Duration.ofSeconds(5));
    }
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }
}
