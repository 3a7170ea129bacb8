package dev.handoff.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.spring.HandoffProperties;
import dev.handoff.spring.TransactionalOutbox;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * docs/spring.md says what the example does: each Java block is an excerpt of the example's code, line for line;
 * the YAML block is its application.yml; the Maven block names this build's versions; the properties table's
 * defaults are the starter's, and it lists every property of the configuration metadata.
 */
class SpringDocTest {

  private static final Path DOC = Path.of("..", "..", "docs", "spring.md");
  private static final Path EXAMPLE = Path.of("..", "spring-orders");
  private static final Pattern BLOCK = Pattern.compile("(?m)^```(\\w*)\\n(.*?)^```$", Pattern.DOTALL);

  @Test
  void everyJavaBlockIsAnExcerptOfTheExampleLineForLine() throws IOException {
    List<String> sources = new ArrayList<>();
    try (Stream<Path> files = Files.walk(EXAMPLE.resolve("src"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        sources.add(Files.readString(f));
      }
    }
    List<String> java = blocks("java");
    assertThat(java).hasSizeGreaterThanOrEqualTo(4);
    for (String block : java) {
      assertThat(sources).as("a source file holding the block%n%s", block).anyMatch(s -> s.contains(block));
    }
  }

  @Test
  void theYamlBlockIsTheExamplesConfigurationAndTheMavenBlockNamesThisBuild() throws IOException {
    assertThat(blocks("yaml")).containsExactly(
        Files.readString(EXAMPLE.resolve("src/main/resources/application.yml")));
    String pom = Files.readString(EXAMPLE.resolve("pom.xml"));
    String xml = blocks("xml").get(0);
    assertThat(xml).contains("<jedis.version>" + property(pom, "jedis.version") + "</jedis.version>",
        "<version>" + property(pom, "handoff.version") + "</version>");
  }

  @Test
  void theRefusedAppendSaysWhatThePageSays() {
    TransactionalOutbox outbox = TransactionalOutbox.of(Outbox.builder().build(),
        new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/none"));
    String line = blocks("").stream().filter(b -> b.startsWith("handoff: an append")).findFirst().orElseThrow();
    assertThatThrownBy(() -> outbox.append(Message.builder("orders", "order-placed").key("o-1").build()))
        .hasMessage(line.strip());
  }

  @Test
  void thePropertiesTableGivesTheStartersDefaultsAndEveryProperty() throws IOException {
    Matcher row = Pattern.compile("(?m)^\\| `(handoff\\.[^`]+)` \\| ([^|]+) \\|").matcher(Files.readString(DOC));
    TreeSet<String> documented = new TreeSet<>();
    while (row.find()) {
      String name = row.group(1);
      documented.add(name);
      Object actual = defaultOf(name);
      String stated = row.group(2).strip();
      if (stated.startsWith("(")) {
        assertThat(actual == null || actual instanceof Collection<?> c && c.isEmpty()).as(name).isTrue();
      } else {
        String value = stated.replace("`", "");
        Object expected = actual instanceof Duration ? DurationStyle.detectAndParse(value) : value;
        assertThat(actual instanceof Duration ? actual : String.valueOf(actual)).as(name).isEqualTo(expected);
      }
    }
    TreeSet<String> metadata = new TreeSet<>();
    String json = metadataJson();
    Matcher names = Pattern.compile("\"name\"\\s*:\\s*\"(handoff\\.[^\"]+)\"")
        .matcher(json.substring(json.indexOf("\"properties\"")));
    while (names.find()) {
      metadata.add(names.group(1));
    }
    metadata.removeIf(n -> n.equals("handoff.topics") || n.equals("handoff.consumers"));
    assertThat(documented).containsAll(metadata);
  }

  @Test
  void theStartersDefaultsAreTheLibrarysOwn() {
    HandoffProperties p = new HandoffProperties();
    HandoffProperties.Group group = new HandoffProperties.Group();
    assertThat(p.getSchema()).isEqualTo(HandoffMigrations.DEFAULT_SCHEMA);
    assertThat(p.getKeyPrefix()).isEqualTo(StreamFormat.DEFAULT_KEY_PREFIX);
    assertThat(p.getShutdownTimeout()).isEqualTo(RelayBuilder.DEFAULT_DRAIN_TIMEOUT);
    assertThat(p.getRelay().getLeaseTtl()).isEqualTo(RelayBuilder.DEFAULT_LEASE_TTL);
    assertThat(p.getRelay().getIdlePollInterval()).isEqualTo(RelayBuilder.DEFAULT_IDLE_POLL_INTERVAL);
    assertThat(p.getRedis().getConnectTimeout()).isEqualTo(RedisConnectionSpec.DEFAULT_CONNECT_TIMEOUT);
    assertThat(p.getRedis().getSocketTimeout()).isEqualTo(RedisConnectionSpec.DEFAULT_SOCKET_TIMEOUT);
    assertThat(group.getWorkers()).isEqualTo(ConsumerBuilder.DEFAULT_WORKERS);
    assertThat(group.getBatchSize()).isEqualTo(ConsumerBuilder.DEFAULT_BATCH_SIZE);
    assertThat(group.getMaxDeliveries()).isEqualTo(ConsumerBuilder.DEFAULT_MAX_DELIVERIES);
    assertThat(group.getInitialBackoff()).isEqualTo(ConsumerBuilder.DEFAULT_INITIAL_BACKOFF);
    assertThat(group.getMinIdle()).isEqualTo(StreamConsumerBuilder.DEFAULT_MIN_IDLE);
    assertThat(new HandoffProperties.Topic().getShards()).isEqualTo(TopicConfig.of("t").shards());
  }

  private static Object defaultOf(String property) {
    String[] parts = property.substring("handoff.".length()).split("\\.");
    Object bean = new HandoffProperties();
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i];
      if (part.equals("<topic>")) {
        bean = new HandoffProperties.Topic();
      } else if (part.equals("<group>")) {
        bean = new HandoffProperties.Group();
      } else {
        Object value = new BeanWrapperImpl(bean).getPropertyValue(camel(part));
        if (i == parts.length - 1) {
          return value;
        }
        bean = value;
      }
    }
    throw new IllegalArgumentException(property);
  }

  private static String camel(String kebab) {
    StringBuilder out = new StringBuilder();
    boolean upper = false;
    for (char c : kebab.toCharArray()) {
      if (c == '-') {
        upper = true;
      } else {
        out.append(upper ? Character.toUpperCase(c) : c);
        upper = false;
      }
    }
    return out.toString();
  }

  private static String metadataJson() throws IOException {
    try (InputStream in = HandoffProperties.class.getClassLoader()
        .getResourceAsStream("META-INF/spring-configuration-metadata.json")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static String property(String pom, String name) {
    Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)</").matcher(pom);
    assertThat(m.find()).as(name).isTrue();
    return m.group(1);
  }

  private static List<String> blocks(String language) {
    try {
      Matcher m = BLOCK.matcher(Files.readString(DOC));
      List<String> out = new ArrayList<>();
      while (m.find()) {
        if (m.group(1).equals(language)) {
          out.add(m.group(2));
        }
      }
      return out;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
