package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.Health;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The HTTP port on its own, over a real socket: /health's code and JSON for each status (a reason's message
 * escaped as JSON), /metrics with a meter added after the start, HEAD without a body, another method 405.
 */
class MetricsServerTest {

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void healthIs200OnlyWhenUpWithTheReasonsAsJson() throws Exception {
    AtomicReference<Health> health = new AtomicReference<>(Health.UP);
    try (MetricsServer server = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), health::get)) {
      HttpResponse<String> up = send(server, "GET", "/health");
      assertThat(up.statusCode()).isEqualTo(200);
      assertThat(up.body()).isEqualTo("{\"status\":\"UP\",\"reasons\":[]}");

      health.set(Health.of(List.of(new Health.Reason("redis-unreachable", "shard \"a\\b\"\n down"),
          new Health.Reason("leases-lost", "lost orders:1"))));
      HttpResponse<String> degraded = send(server, "GET", "/health");
      assertThat(degraded.statusCode()).isEqualTo(503);
      assertThat(degraded.body()).isEqualTo("{\"status\":\"DEGRADED\",\"reasons\":["
          + "{\"code\":\"redis-unreachable\",\"message\":\"shard \\\"a\\\\b\\\"\\n down\"},"
          + "{\"code\":\"leases-lost\",\"message\":\"lost orders:1\"}]}");

      health.set(Health.down("closed", "relay r closed"));
      HttpResponse<String> down = send(server, "GET", "/health");
      assertThat(down.statusCode()).isEqualTo(503);
      assertThat(down.body()).isEqualTo(
          "{\"status\":\"DOWN\",\"reasons\":[{\"code\":\"closed\",\"message\":\"relay r closed\"}]}");
    }
  }

  @Test
  void metricsServeWhatIsRegisteredAfterTheStartAndOtherRequestsAreRefused() throws Exception {
    try (MetricsServer server = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), () -> Health.UP)) {
      server.registry().counter("handoff.test.things", "topic", "t").increment(3);
      HttpResponse<String> metrics = send(server, "GET", "/metrics");
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.body()).contains("\nhandoff_test_things_total{topic=\"t\"} 3.0\n");

      HttpResponse<String> head = send(server, "HEAD", "/metrics");
      assertThat(head.statusCode()).isEqualTo(200);
      assertThat(head.headers().firstValue("Content-Type")).hasValue(MetricsServer.PROMETHEUS_TEXT);
      assertThat(head.body()).isEmpty();

      HttpResponse<String> post = send(server, "POST", "/metrics");
      assertThat(post.statusCode()).isEqualTo(405);
      assertThat(post.headers().firstValue("Allow")).hasValue("GET, HEAD");
      assertThat(send(server, "GET", "/").statusCode()).isEqualTo(404);
      assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(404);
    }
  }

  private HttpResponse<String> send(MetricsServer server, String method, String path) throws Exception {
    URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + path);
    return http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5))
        .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
  }
}
