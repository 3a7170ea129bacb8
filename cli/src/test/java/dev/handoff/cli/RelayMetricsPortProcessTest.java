package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.io.IOException;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code handoff.jar relay --metrics-port} as a real process, scraped over HTTP: the published counters add up to
 * the rows appended, shard by shard as the outbox says; the leases gauge is the shard count; /health is 200 and UP,
 * then 503 and DEGRADED with {@code redis-unreachable} while Redis is stopped; another path is 404; and the port is
 * closed once SIGTERM has stopped the relay.
 */
@HandoffTest
class RelayMetricsPortProcessTest {

  private static final Duration DEADLINE = Duration.ofSeconds(30);
  private static final Pattern PUBLISHED =
      Pattern.compile("^handoff_relay_published_total\\{shard=\"(\\d+)\",topic=\"scraped\"} (\\S+)$",
          Pattern.MULTILINE);

  private final TestEnvironment env;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  RelayMetricsPortProcessTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void metricsAndHealthAreScrapedOverHttpFromARunningRelay() throws Exception {
    RestartableRedis redis = env.privateRedis();
    int port = freePort();
    Path log = Files.createTempFile("relay-metrics", ".log");
    ProcessBuilder pb = command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", redis.uri().toString(),
        "--topics", "scraped:3", "--schema", env.schema(), "--key-prefix", env.keyPrefix(), "--lease-ttl", "PT5S",
        "--metrics-port", Integer.toString(port), "--metrics-bind", "127.0.0.1");
    pb.redirectErrorStream(true).redirectOutput(log.toFile());
    Process relay = pb.start();
    try {
      await().atMost(DEADLINE).ignoreExceptions().until(() -> get(port, "/health").statusCode() == 200);
      HttpResponse<String> up = get(port, "/health");
      assertThat(up.headers().firstValue("Content-Type")).hasValue("application/json; charset=utf-8");
      assertThat(up.body()).isEqualTo("{\"status\":\"UP\",\"reasons\":[]}");

      int rows = 40;
      append("scraped", rows);
      await().atMost(DEADLINE).until(() -> published(get(port, "/metrics").body()).values().stream()
          .mapToLong(Long::longValue).sum() == rows);
      HttpResponse<String> metrics = get(port, "/metrics");
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
      Map<Integer, Long> perShard = published(metrics.body());
      assertThat(perShard).as("every configured shard has its series, at 0 if it published nothing")
          .containsOnlyKeys(0, 1, 2);
      for (int shard = 0; shard < 3; shard++) {
        assertThat(perShard.get(shard)).as("shard %d", shard).isEqualTo(env.queryLong(
            "select count(*) from outbox where topic = 'scraped' and shard = ? and published_at is not null", shard));
      }
      assertThat(env.queryLong("select count(*) from outbox where topic = 'scraped' and published_at is null"))
          .isZero();
      assertThat(metrics.body()).contains("\nhandoff_relay_leases_owned 3.0\n")
          .contains("\nhandoff_relay_failures_total 0.0\n")
          .containsPattern("(?m)^jvm_memory_used_bytes\\{area=\"heap\",")
          .containsPattern("(?m)^process_uptime_seconds ");

      HttpResponse<String> openMetrics = http.send(HttpRequest.newBuilder(uri(port, "/metrics"))
          .header("Accept", "application/openmetrics-text; version=1.0.0").build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(openMetrics.headers().firstValue("Content-Type"))
          .hasValue("application/openmetrics-text; version=1.0.0; charset=utf-8");
      assertThat(openMetrics.body()).contains("\nhandoff_relay_leases_owned 3.0\n").endsWith("# EOF\n");

      HttpResponse<String> missing = get(port, "/metricz");
      assertThat(missing.statusCode()).isEqualTo(404);

      redis.stop();
      append("scraped", 5); // the next cycle has something to send, and finds Redis gone
      await().atMost(DEADLINE).until(() -> get(port, "/health").statusCode() == 503);
      HttpResponse<String> degraded = get(port, "/health");
      assertThat(degraded.body()).startsWith("{\"status\":\"DEGRADED\",\"reasons\":[{\"code\":\"redis-unreachable\","
          + "\"message\":\"").endsWith("\"}]}");

      redis.startAgain(); // empty: the relay republishes what it had confirmed, as after any lost stream
      await().atMost(DEADLINE).until(() -> get(port, "/health").statusCode() == 200);
      await().atMost(DEADLINE).until(() -> env.queryLong("select count(*) from outbox where published_at is null")
          == 0);
    } finally {
      relay.destroy(); // SIGTERM
    }
    assertThat(relay.waitFor(15, TimeUnit.SECONDS)).isTrue();
    assertThat(relay.exitValue()).as(Files.readString(log)).isZero();
    assertThat(Files.readAllLines(log).stream().filter(l -> l.contains("serving /metrics and /health on")))
        .singleElement().asString().endsWith("serving /metrics and /health on http://127.0.0.1:" + port);
    assertThatThrownBy(() -> get(port, "/health")).as("the port is closed after the relay stopped")
        .isInstanceOf(ConnectException.class);
  }

  @Test
  void aMetricsPortInUseIsOneLineAndExitTwo() throws Exception {
    try (ServerSocket taken = new ServerSocket(0)) {
      Path err = Files.createTempFile("relay-port", ".err");
      ProcessBuilder pb = command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
          "--topics", "scraped", "--schema", env.schema(), "--key-prefix", env.keyPrefix(),
          "--metrics-port", Integer.toString(taken.getLocalPort()));
      pb.redirectError(err.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD);
      Process p = pb.start();
      assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).isEqualTo(2);
      assertThat(Files.readAllLines(err)).containsExactly("handoff: cannot listen on 0.0.0.0:" + taken.getLocalPort()
          + " (--metrics-port, --metrics-bind): Address already in use");
    }
  }

  /** The published counter of each shard of topic {@code scraped}, from the Prometheus text. */
  private static Map<Integer, Long> published(String text) {
    Map<Integer, Long> counts = new TreeMap<>();
    Matcher m = PUBLISHED.matcher(text);
    while (m.find()) {
      counts.put(Integer.parseInt(m.group(1)), (long) Double.parseDouble(m.group(2)));
    }
    return counts;
  }

  private void append(String topic, int rows) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < rows; i++) {
        outbox.append(tx, Message.builder(topic, "order.placed").key("order-" + i).payload("x").build());
      }
      tx.commit();
    }
  }

  private HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(uri(port, path)).timeout(Duration.ofSeconds(5)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static URI uri(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static int freePort() {
    return dev.handoff.testing.FreePorts.take();
  }

  private static ProcessBuilder command(String... args) {
    return HandoffProcess.relay(args);
  }
}
