package dev.handoff.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.internal.Shards;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/wire-format.md is the contract for consumers in other languages: its golden examples and its key table are
 * read from the document itself and compared with what the code writes, byte for byte.
 */
class WireFormatTest {

  private static final String GOLDEN_ID = "1764497730123-0";

  /** The golden message, built here independently of the document. */
  private static final StreamMessage GOLDEN = new StreamMessage(
      UUID.fromString("0190f1c2-3d4e-7f00-8a1b-2c3d4e5f6071"), 42, "payments", "payment.created", "pay-1",
      Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
      Instant.parse("2026-11-30T10:15:30.123456Z"), "{\"amount\":1250}".getBytes(StandardCharsets.UTF_8));

  @Test
  void theGoldenStreamEntryIsWhatTheCodeWritesAndReads() throws IOException {
    Map<String, String> documented = new LinkedHashMap<>();
    for (String line : block("golden-stream-entry")) {
      int space = line.indexOf(' ');
      documented.put(line.substring(0, space), line.substring(space + 1));
    }
    Map<String, String> written = new LinkedHashMap<>();
    StreamFormat.encode(GOLDEN).forEach((k, v) ->
        written.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
    assertThat(written).containsExactlyEntriesOf(documented); // same fields, same order, same bytes

    Map<byte[], byte[]> raw = new LinkedHashMap<>();
    documented.forEach((k, v) -> raw.put(k.getBytes(StandardCharsets.UTF_8), v.getBytes(StandardCharsets.UTF_8)));
    assertThat(StreamFormat.decode(raw)).isEqualTo(GOLDEN);
  }

  @Test
  void theGoldenListElementIsWhatTheCodeWritesAndReads() throws IOException {
    List<String> hex = new ArrayList<>();
    for (String line : block("golden-list-element")) {
      hex.addAll(List.of(line.trim().split("\\s+")));
    }
    byte[] documented = new byte[hex.size()];
    for (int i = 0; i < documented.length; i++) {
      documented[i] = (byte) Integer.parseInt(hex.get(i), 16);
    }
    assertThat(ListFormat.encode(GOLDEN_ID, GOLDEN)).isEqualTo(documented);
    assertThat(documented).hasSize(351);

    ListFormat.Element element = ListFormat.decode(documented);
    assertThat(element.id()).isEqualTo(GOLDEN_ID);
    assertThat(element.messageId()).isEqualTo(GOLDEN.messageId());
    assertThat(element.message()).isEqualTo(GOLDEN);
  }

  @Test
  void theKeyTableNamesTheKeysTheCodeUses() throws IOException {
    Set<String> documented = new TreeSet<>();
    Matcher m = Pattern.compile("^\\| `(<prefix>[^`]*)`", Pattern.MULTILINE).matcher(document());
    while (m.find()) {
      documented.add(m.group(1).replace("<prefix>", "handoff").replace("<topic>", "payments")
          .replace("<shard>", "0").replace("<consumer>", "c1"));
    }
    String stream = StreamFormat.streamKey("handoff", "payments", 0);
    String list = ListFormat.listKey("handoff", "payments", 0);
    String processing = ListFormat.processingKey(list, "c1");
    assertThat(documented).containsExactlyInAnyOrder(stream, StreamFormat.relayKey(stream), list,
        ListFormat.relayKey(list), ListFormat.consumersKey(list), processing, ListFormat.heartbeatKey(processing),
        ListFormat.deliveriesKey(list));
  }

  @Test
  void theDocumentedShardOfAKeyIsTheOneTheOutboxPicks() {
    UUID any = UUID.randomUUID();
    assertThat(Shards.of("pay-1", any, 4)).isEqualTo(2);
    assertThat(Shards.of("pay-1", any, 16)).isEqualTo(14);
  }

  /** The lines of the fenced block whose info string is {@code text <name>}. */
  private static List<String> block(String name) throws IOException {
    List<String> lines = document().lines().toList();
    int start = lines.indexOf("```text " + name);
    assertThat(start).as("docs/wire-format.md has a block named %s", name).isNotNegative();
    List<String> out = new ArrayList<>();
    for (int i = start + 1; !lines.get(i).equals("```"); i++) {
      out.add(lines.get(i));
    }
    return out;
  }

  private static String document() throws IOException {
    Path doc = Path.of(System.getProperty("basedir", ".")).resolve("../docs/wire-format.md");
    return Files.readString(doc, StandardCharsets.UTF_8);
  }
}
