package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.StreamId;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The trim margin: entries every group finished stay in the stream for {@code trimMargin}, measured on the relay's
 * clock against the time in their IDs, and go at the first trim after it. A relay whose clock is 11 minutes ahead
 * stands for the same relay 11 minutes later; maintenance is run by hand ({@code maintainOnce}), and its report
 * says what held the stream back.
 */
@HandoffTest
class TrimMarginTest {

  private static final Duration MARGIN = Duration.ofMinutes(10);

  private final TestEnvironment env;

  TrimMarginTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void entriesEveryGroupFinishedStayForTheMarginAndGoAtTheFirstTrimAfterIt() throws Exception {
    String topic = "margin";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    env.redis().xgroupCreate(key, "g", new StreamEntryID(0, 0), true);
    RelayTestSupport.append(env, topic, 250);
    RelayTestSupport.relayUntilPublished(env, RelayTestSupport.relay(env, topic).trimMargin(MARGIN));
    finishAll(key);
    String last = env.redis().xrevrange(key, "+", "-", 1).get(0).getID().toString();
    RetentionReport.StreamRetention within;
    try (Relay relay = RelayTestSupport.relay(env, topic).trimMargin(MARGIN).build()) {
      relay.relayOnce(); // takes the lease
      within = relay.maintainOnce().streams().get(0);
    }
    assertThat(within.holdingGroup()).isEqualTo("(trim margin)");
    assertThat(within.trimmed()).isZero();
    assertThat(StreamId.parse(within.minId())).isLessThan(StreamId.parse(first(key)));
    assertThat(env.redis().xlen(key)).as("within the margin, finished entries stay").isEqualTo(250);

    Clock later = Clock.offset(Clock.systemUTC(), MARGIN.plusMinutes(1));
    RetentionReport.StreamRetention after;
    try (Relay relay = RelayTestSupport.relay(env, topic).trimMargin(MARGIN).clock(later).build()) {
      relay.relayOnce();
      after = relay.maintainOnce().streams().get(0);
    }
    // Past the margin, the trim point is the group's again: every entry it finished may go.
    assertThat(after.holdingGroup()).isEqualTo("g");
    assertThat(after.minId()).isEqualTo(last);
    assertThat(after.trimmed()).isPositive();
    assertThat(env.redis().xlen(key)).isEqualTo(250 - after.trimmed());
  }

  private String first(String key) {
    return env.redis().xrange(key, "-", "+", 1).get(0).getID().toString();
  }

  /** Group {@code g} reads and acknowledges every entry of {@code key}. */
  private void finishAll(String key) {
    while (true) {
      List<Map.Entry<String, List<StreamEntry>>> read = env.redis().xreadGroup("g", "c",
          XReadGroupParams.xReadGroupParams().count(100), Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      if (read == null || read.isEmpty() || read.get(0).getValue().isEmpty()) {
        return;
      }
      env.redis().xack(key, "g", read.get(0).getValue().stream().map(StreamEntry::getID)
          .toArray(StreamEntryID[]::new));
    }
  }
}
