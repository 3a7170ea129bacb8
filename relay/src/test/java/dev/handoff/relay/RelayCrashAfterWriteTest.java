package dev.handoff.relay;

import static dev.handoff.relay.RelayTestSupport.appendKeyed;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A relay killed between its write to Redis (XADD, RPUSH) and marking its rows published, once per transport
 * ({@link RelayCrashAfterWriteOnStreamsTest}, {@link RelayCrashAfterWriteOnListsTest}): its successor sends the
 * pending batch again with its recorded IDs and Redis keeps one copy of each row.
 */
@HandoffTest
abstract class RelayCrashAfterWriteTest {

  static {
    // The test kills a relay thread on purpose.
    org.awaitility.Awaitility.doNotCatchUncaughtExceptionsByDefault();
  }

  private static final String TOPIC = "orders";

  private final TestEnvironment env;
  private final Transport transport;

  RelayCrashAfterWriteTest(TestEnvironment env, Transport transport) {
    this.env = env;
    this.transport = transport;
  }

  @Test
  void crashAfterTheWriteBeforeMarkingIsRepairedWithoutDuplicates() throws Exception {
    appendKeyed(env, TOPIC, 300);
    AtomicBoolean crashed = new AtomicBoolean();
    Relay crashing = relay().leaseTtl(Duration.ofMillis(600)).faults(new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        crashed.set(true);
        throw new SimulatedCrash("after the " + (transport == Transport.LIST ? "RPUSH" : "XADD") + ", before the mark");
      }
    }).build();
    crashing.start();
    await().atMost(Duration.ofSeconds(20)).untilTrue(crashed);
    // The crashed relay's thread is gone without releasing its lease or marking anything.
    long written = transport == Transport.LIST ? env.redis().llen(key()) : env.redis().xlen(key());
    assertThat(written).isPositive();
    assertThat(env.queryLong("select count(*) from outbox where published_at is not null")).isZero();
    assertThat(env.queryLong("select cardinality(batch_ids) from relay_lease where topic = ?", TOPIC))
        .as("the batch that reached Redis is still recorded as pending").isEqualTo(written);

    // The successor takes the lease after the TTL and sends the pending batch again: Redis skips what it holds.
    // The stream holds more entries than the database counts, by the pending batch: not a database gone back in time.
    long resent;
    try (LogCapture logs = LogCapture.start()) {
      resent = RelayTestSupport.relayUntilPublished(env, relay().leaseTtl(Duration.ofMillis(600)));
      assertThat(logs.warnings()).noneMatch(l -> l.contains("went back in time"));
    }
    assertThat(resent).as("the crashed batch was re-sent and found in Redis").isEqualTo(written);
    List<RelayTestSupport.Entry> entries = transport == Transport.LIST
        ? RelayTestSupport.listEntries(env.redis(), key())
        : RelayTestSupport.entries(env.redis(), key());
    assertThat(entries).hasSize(300);
    assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(300);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    if (transport == Transport.LIST) {
      RelayTestSupport.assertInOutboxIdOrder(entries);
    }
    crashing.close(Duration.ofMillis(100));
  }

  private RelayBuilder relay() {
    RelayBuilder builder = RelayTestSupport.relay(env, TOPIC);
    return transport == Transport.LIST ? builder.listTransport(10_000) : builder;
  }

  private String key() {
    return transport == Transport.LIST
        ? ListFormat.listKey(env.keyPrefix(), TOPIC, 0)
        : StreamFormat.streamKey(env.keyPrefix(), TOPIC, 0);
  }
}
