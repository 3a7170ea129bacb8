package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/**
 * A handler's log lines carry the message and the producer's trace: the SLF4J MDC holds {@code traceparent},
 * {@code handoff.message_id} and where the message came from while the handler runs, and nothing of it afterwards.
 */
@HandoffTest
class HandlerMdcTest {

  private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private final TestEnvironment env;

  HandlerMdcTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void theMdcHoldsTheMessageAndItsTraceWhileTheHandlerRunsAndIsRestoredAfter() {
    Fixture f = new Fixture(env, "mdc");
    StreamMessage traced = message(f, Map.of("traceparent", TRACEPARENT));
    StreamMessage untraced = message(f, Map.of());
    String tracedId = f.publish(traced);
    f.publish(untraced);
    List<Map<String, String>> seen = new ArrayList<>();
    MDC.put("request", "outer"); // the caller's own MDC survives, and a key handoff sets is put back as it was
    MDC.put("handoff.topic", "before");
    try (StreamConsumer consumer = f.consumer("mdc").handler((tx, m) -> seen.add(MDC.getCopyOfContextMap()))
        .build()) {
      PollResult r = consumer.pollOnce();

      assertThat(r.handled()).isEqualTo(2);
      assertThat(seen).hasSize(2);
      assertThat(seen.get(0)).containsEntry("traceparent", TRACEPARENT)
          .containsEntry("handoff.message_id", traced.messageId().toString())
          .containsEntry("handoff.topic", "mdc")
          .containsEntry("handoff.group", "mdc")
          .containsEntry("handoff.source", f.streamKey())
          .containsEntry("handoff.entry_id", tracedId)
          .containsEntry("request", "outer");
      assertThat(seen.get(1)).doesNotContainKey("traceparent")
          .containsEntry("handoff.message_id", untraced.messageId().toString());
      assertThat(MDC.get("traceparent")).isNull();
      assertThat(MDC.get("handoff.message_id")).isNull();
      assertThat(MDC.get("handoff.topic")).isEqualTo("before");
      assertThat(MDC.get("request")).isEqualTo("outer");
    } finally {
      MDC.clear();
    }
  }

  @Test
  void aBatchHandlerSeesTheTopicAndGroupButNoSingleMessage() {
    Fixture f = new Fixture(env, "mdc-batch");
    f.publish(message(f, Map.of("traceparent", TRACEPARENT)));
    f.publish(message(f, Map.of()));
    List<Map<String, String>> seen = new ArrayList<>();
    try (StreamConsumer consumer = f.consumerWithoutHandler("mdc-batch").batchHandler((tx, ms) -> {
      seen.add(MDC.getCopyOfContextMap());
    }).build()) {
      assertThat(consumer.pollOnce().handled()).isEqualTo(2);

      assertThat(seen).singleElement().satisfies(mdc -> assertThat(mdc)
          .containsEntry("handoff.topic", "mdc-batch").containsEntry("handoff.group", "mdc-batch")
          .doesNotContainKeys("traceparent", "handoff.message_id"));
      assertThat(MDC.getCopyOfContextMap() == null || MDC.getCopyOfContextMap().isEmpty()).isTrue();
    } finally {
      MDC.clear();
    }
  }

  private static StreamMessage message(Fixture f, Map<String, String> headers) {
    return new StreamMessage(UUID.randomUUID(), System.nanoTime(), f.topic, "test.event", "k", headers,
        Instant.now().truncatedTo(ChronoUnit.MILLIS), "{}".getBytes(StandardCharsets.UTF_8));
  }
}
