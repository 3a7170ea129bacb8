package dev.handoff.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class StreamFormatTest {

  private static final StreamMessage MESSAGE = new StreamMessage(
      UUID.fromString("0190f1c2-3d4e-7f00-8a1b-2c3d4e5f6071"), 42, "payments", "payment.created", "pay-1",
      Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "quote", "a\"b\\c\n"),
      Instant.parse("2026-11-30T10:15:30.123456Z"), new byte[] {0, 1, 2, (byte) 0xff});

  @Test
  void roundTripsEveryField() {
    assertThat(StreamFormat.decode(StreamFormat.encode(MESSAGE))).isEqualTo(MESSAGE);
    StreamMessage keyless = new StreamMessage(MESSAGE.messageId(), 1, "t", "x", null, Map.of(),
        MESSAGE.createdAt(), new byte[0]);
    assertThat(StreamFormat.decode(StreamFormat.encode(keyless))).isEqualTo(keyless);
    assertThat(MESSAGE.traceparent()).startsWith("00-4bf9");
  }

  @Test
  void namesTheMissingOrBrokenField() {
    Map<byte[], byte[]> fields = StreamFormat.encode(MESSAGE);
    assertThatThrownBy(() -> StreamFormat.decode(without(fields, "message_id")))
        .isInstanceOfSatisfying(MalformedEntryException.class, e -> assertThat(e.field()).isEqualTo("message_id"));
    assertThatThrownBy(() -> StreamFormat.decode(with(fields, "message_id", "nope")))
        .isInstanceOfSatisfying(MalformedEntryException.class, e -> assertThat(e.field()).isEqualTo("message_id"));
    assertThatThrownBy(() -> StreamFormat.decode(with(fields, "v", "2")))
        .isInstanceOfSatisfying(MalformedEntryException.class, e -> assertThat(e.field()).isEqualTo("v"))
        .hasMessageContaining("version '2'");
    assertThatThrownBy(() -> StreamFormat.decode(with(fields, "headers", "{broken")))
        .isInstanceOfSatisfying(MalformedEntryException.class, e -> assertThat(e.field()).isEqualTo("headers"));
    assertThatThrownBy(() -> StreamFormat.decode(null))
        .isInstanceOf(MalformedEntryException.class)
        .hasMessageContaining("deleted or trimmed");
  }

  @Test
  void streamKeysUseAHashTagPerShard() {
    assertThat(StreamFormat.streamKey("handoff", "payments", 3)).isEqualTo("handoff:{payments:3}");
    assertThatThrownBy(() -> StreamFormat.streamKey("bad prefix", "payments", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPrefix");
  }

  private static Map<byte[], byte[]> without(Map<byte[], byte[]> fields, String name) {
    Map<byte[], byte[]> copy = new LinkedHashMap<>();
    fields.forEach((k, v) -> {
      if (!new String(k, StandardCharsets.UTF_8).equals(name)) {
        copy.put(k, v);
      }
    });
    return copy;
  }

  private static Map<byte[], byte[]> with(Map<byte[], byte[]> fields, String name, String value) {
    Map<byte[], byte[]> copy = without(fields, name);
    copy.put(name.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    return copy;
  }
}
