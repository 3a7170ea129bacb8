package dev.handoff.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class ListFormatTest {

  private final StreamMessage message = new StreamMessage(UUID.randomUUID(), 42, "orders", "order.placed", "k-1",
      Map.of("traceparent", "00-abc-def-01"), Instant.parse("2024-01-02T03:04:05.678Z"),
      new byte[] {0, 1, 2, '\n', (byte) 0xff});

  @Test
  void roundTripKeepsTheIdTheMessageIdAndEveryField() {
    byte[] element = ListFormat.encode("1700000000000-7", message);
    ListFormat.Element e = ListFormat.decode(element);
    assertThat(e.id()).isEqualTo("1700000000000-7");
    assertThat(e.messageId()).isEqualTo(message.messageId());
    assertThat(e.message()).isEqualTo(message);
    assertThat(ListFormat.header(element)).containsExactly("1700000000000-7", message.messageId().toString());
    assertThat(new String(element, 0, 4, StandardCharsets.US_ASCII)).isEqualTo("hl1 ");
  }

  @Test
  void malformedElementsNameWhatIsWrong() {
    assertThatThrownBy(() -> ListFormat.decode("not an element".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(MalformedEntryException.class).hasMessageContaining("header");
    byte[] element = ListFormat.encode("1-1", message);
    byte[] truncated = Arrays.copyOf(element, element.length - 3);
    assertThatThrownBy(() -> ListFormat.decode(truncated)).isInstanceOf(MalformedEntryException.class);
  }

  @Test
  void keysShareTheShardHashTag() {
    String list = ListFormat.listKey("handoff", "orders", 3);
    assertThat(list).isEqualTo("handoff:{orders:3}:list");
    String processing = ListFormat.processingKey(list, "host-1-0");
    assertThat(processing).isEqualTo("handoff:{orders:3}:list:processing:host-1-0");
    assertThat(ListFormat.consumerOf(processing)).isEqualTo("host-1-0");
    assertThat(ListFormat.heartbeatKey(processing)).endsWith(":alive").contains("{orders:3}");
  }
}
