package dev.handoff.ledger.demo;

import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerException;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;

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

    /** The report as printed: the counts, what each is made of, the naive contrast and the audit. */
    public List<String> lines() {
      return DemoReportText.lines(this);
    }
  }

  private Demo() {}

  /**
   * Runs the demo against a migrated schema that holds no payments yet, on {@code servers} (one Redis server or a
   * Redis Cluster), printing progress to {@code out}.
   *
   * @throws LedgerException if the schema or the streams already hold data
   */
  public static Report run(LedgerServers servers, Config config, PrintWriter out) {
    TimedLog log = new TimedLog(out, 6);
    DemoTally tally = new DemoTally(servers, config);
    tally.requireFresh();
    return new DemoScript(servers, config, log, tally).run();
  }
}
