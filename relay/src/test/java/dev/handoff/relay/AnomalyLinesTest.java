package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XTrimParams;

/**
 * When Redis refuses IDs the relay assigned, the relay says why in one of distinct lines: another message holds the
 * ID, the ID was trimmed, something else raised the stream's top (RelaySharingAndAnomalyTest), or the database went
 * back in time (DatabaseRewindTest). Each time the rows get fresh IDs and are published once.
 */
@HandoffTest
class AnomalyLinesTest {

  private final TestEnvironment env;

  AnomalyLinesTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void anotherMessageAtTheAssignedIdIsNamedAsSuch() throws Exception {
    String line = refusedOnce("held", key -> {
      long ms = env.queryLong("select batch_ms from relay_lease where topic = 'held'");
      long seq = env.queryLong("select batch_seq from relay_lease where topic = 'held'");
      env.redis().xadd(key, new StreamEntryID(ms, seq), Map.of("message_id", UUID.randomUUID().toString()));
    });
    assertThat(line).contains("refused 1 entries", "another message holds their IDs in the stream, and the"
        + " database does not know it: another writer adds entries with this stream's IDs");
  }

  @Test
  void anIdBelowTheOldestEntryLeftIsNamedAsTrimmed() throws Exception {
    String line = refusedOnce("trimmed", key -> {
      env.redis().xadd(key, new StreamEntryID(System.currentTimeMillis() + 60_000, 0), Map.of("stranger", "yes"));
      env.redis().xtrim(key, XTrimParams.xTrimParams().maxLen(0));
    });
    assertThat(line).contains("refused 1 entries", "that it does not hold, below its oldest entry: those IDs were"
        + " trimmed");
  }

  /**
   * Publishes one row, then another with {@code meddle} run on the stream between its assignment and its write;
   * returns the one ERROR line the refusal logged, after checking that both rows are in the stream once.
   */
  private String refusedOnce(String topic, Consumer<String> meddle) throws Exception {
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    AtomicBoolean armed = new AtomicBoolean();
    try (LogCapture logs = LogCapture.start();
        Relay relay = RelayTestSupport.relay(env, topic).faults(new RelayFaults() {
          @Override
          public void beforeStreamWrite(ShardId shard, int rows) {
            if (armed.compareAndSet(true, false)) {
              meddle.accept(key);
            }
          }
        }).build()) {
      RelayTestSupport.append(env, topic, 1);
      relay.relayOnce();
      RelayTestSupport.append(env, topic, 1);
      armed.set(true);
      relay.relayOnce();
      relay.relayOnce();

      assertThat(RelayTestSupport.unpublished(env, topic)).isZero();
      assertThat(env.queryLong("select count(*) from outbox where topic = ? and published_at is not null", topic))
          .isEqualTo(2);
      assertThat(logs.warnings()).noneMatch(l -> l.contains("went back in time"));
      return logs.warnings().stream().filter(l -> l.contains("refused")).reduce((a, b) -> {
        throw new AssertionError("two refusal lines: " + a + " / " + b);
      }).orElseThrow(() -> new AssertionError("no refusal line in " + logs.warnings()));
    }
  }
}
