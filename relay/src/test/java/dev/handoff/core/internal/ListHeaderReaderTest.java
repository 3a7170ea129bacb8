package dev.handoff.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Lua reader of a list element's header, which every list script shares, reads exactly what the Java reader
 * ({@link ListFormat#header}) reads, on a real Redis: the same ID and message ID for a good element, and nothing for
 * each kind of bad header.
 */
@HandoffTest
class ListHeaderReaderTest {

  private static final LuaScript READ = ListScripts.of("header-test", "return {element_header(ARGV[1])}");
  private static final UUID MESSAGE_ID = UUID.fromString("0190f1c2-3d4e-7f00-8a1b-2c3d4e5f6071");

  private final TestEnvironment env;

  ListHeaderReaderTest(TestEnvironment env) {
    this.env = env;
  }

  static List<Object[]> elements() {
    byte[] good = ListFormat.encode("1764497730123-7", new StreamMessage(MESSAGE_ID, 42, "payments",
        "payment.created", "pay-1", Map.of(), Instant.parse("2026-11-30T10:15:30.123456Z"),
        "{\"amount\":1250}".getBytes(StandardCharsets.UTF_8)));
    String mid = MESSAGE_ID.toString();
    List<Object[]> out = new ArrayList<>();
    out.add(new Object[] {"a good element", good});
    out.add(new Object[] {"another format version", ("hl2 1-0 " + mid + "\nrest").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"no newline", ("hl1 1-0 " + mid).getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"a newline past 128 bytes",
        ("hl1 1-0 " + mid + " ".repeat(100) + "\n").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"an ID without a dash", ("hl1 10 " + mid + "\n").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"an ID with a letter", ("hl1 1a-0 " + mid + "\n").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"an empty sequence", ("hl1 1- " + mid + "\n").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"a short message id", "hl1 1-0 0190f1c2\n".getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"a message id with a non-hex byte",
        ("hl1 1-0 " + mid.replace('a', 'z') + "\n").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"no space before the message id", ("hl1 1-0" + mid + "\n").getBytes(StandardCharsets.UTF_8)});
    out.add(new Object[] {"an empty element", new byte[0]});
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("elements")
  void theLuaReaderReadsWhatTheJavaReaderReads(String what, byte[] element) {
    String[] java = ListFormat.header(element);
    List<?> lua = (List<?>) READ.run(env.redis(), List.of(), List.of(element));

    if (java == null) {
      assertThat(lua).as(what).isEmpty();
      return;
    }
    assertThat(lua).as(what).hasSize(4);
    assertThat(new String((byte[]) lua.get(0), StandardCharsets.UTF_8)).isEqualTo(java[0]);
    assertThat(new String((byte[]) lua.get(1), StandardCharsets.UTF_8)).isEqualTo(java[1]);
    String[] msSeq = java[0].split("-");
    assertThat(lua.get(2)).isEqualTo(Long.parseLong(msSeq[0]));
    assertThat(lua.get(3)).isEqualTo(Long.parseLong(msSeq[1]));
  }
}
