package dev.handoff.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.handoff.core.Health;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The relay process's HTTP port: {@code GET /metrics} is the registry's Prometheus text (OpenMetrics when the
 * {@code Accept} header asks for it), {@code GET /health} is 200 when the relay is UP and 503 otherwise, with
 * {@code {"status":"DEGRADED","reasons":[{"code":"redis-unreachable","message":"..."}]}}; any other path is 404 and
 * any other method 405. Neither path queries a server: the gauges are refreshed on their own schedule and the
 * health is what the relay's threads already recorded, so a probe may ask as often as it likes.
 *
 * <p>The registry also carries the JVM's and the process's basics, from Micrometer's own binders (class loading,
 * memory pools, GC pauses, threads, CPU, uptime): they read the JVM's MXBeans at scrape and query nothing.
 *
 * <p>Served by the JDK's HTTP server on two daemon threads, so a slow scraper never holds the relay or the JVM's
 * exit. Thread-safe; {@link #close} stops it at once.
 */
final class MetricsServer implements AutoCloseable {

  /** The Prometheus text format, 0.0.4: what a scraper gets unless it asks for OpenMetrics. */
  static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

  /** OpenMetrics 1.0, for an {@code Accept} header naming {@code application/openmetrics-text}. */
  static final String OPEN_METRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8";

  private static final String JSON = "application/json; charset=utf-8";

  private final HttpServer server;
  private final ExecutorService executor;
  private final PrometheusMeterRegistry registry;
  private final JvmGcMetrics gc;
  private final Supplier<Health> health;

  private MetricsServer(HttpServer server, ExecutorService executor, PrometheusMeterRegistry registry,
      JvmGcMetrics gc, Supplier<Health> health) {
    this.server = server;
    this.executor = executor;
    this.registry = registry;
    this.gc = gc;
    this.health = health;
  }

  /**
   * Listens on {@code address} and serves at once: a registry with the JVM's meters until the relay's are added to
   * {@link #registry()}, and whatever {@code health} says (asked at each request, from the server's threads).
   *
   * @throws IllegalStateException naming {@code --metrics-port} when the address cannot be bound (in use, not an
   *     address of this host, a port below 1024 without the right)
   */
  static MetricsServer start(InetSocketAddress address, Supplier<Health> health) {
    HttpServer server;
    try {
      server = HttpServer.create(address, 0);
    } catch (BindException e) {
      throw new IllegalStateException("cannot listen on " + address.getHostString() + ":" + address.getPort()
          + " (--metrics-port, --metrics-bind): " + e.getMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the metrics port " + address.getPort() + " (--metrics-port): "
          + e.getMessage(), e);
    }
    ExecutorService executor = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "handoff-metrics-http");
      t.setDaemon(true);
      return t;
    });
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new ClassLoaderMetrics().bindTo(registry);
    new JvmMemoryMetrics().bindTo(registry);
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    MetricsServer metrics = new MetricsServer(server, executor, registry, gc, health);
    server.createContext("/", metrics::handle);
    server.setExecutor(executor);
    server.start();
    return metrics;
  }

  /** The registry scraped at {@code /metrics}, for {@code RelayBuilder.meterRegistry}. */
  MeterRegistry registry() {
    return registry;
  }

  /** The address bound, with the port chosen by the system if 0 was asked. */
  InetSocketAddress address() {
    return server.getAddress();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String method = exchange.getRequestMethod();
      boolean head = method.equals("HEAD");
      if (!head && !method.equals("GET")) {
        exchange.getResponseHeaders().set("Allow", "GET, HEAD");
        respond(exchange, 405, "text/plain; charset=utf-8", "only GET and HEAD\n", false);
        return;
      }
      switch (exchange.getRequestURI().getPath()) {
        case "/metrics" -> {
          String accept = exchange.getRequestHeaders().getFirst("Accept");
          String type = accept != null && accept.toLowerCase(Locale.ROOT).contains("application/openmetrics-text")
              ? OPEN_METRICS : PROMETHEUS_TEXT;
          respond(exchange, 200, type, registry.scrape(type), head);
        }
        case "/health" -> {
          Health h = health.get();
          respond(exchange, h.status() == Health.Status.UP ? 200 : 503, JSON, json(h), head);
        }
        default -> respond(exchange, 404, "text/plain; charset=utf-8", "not found: /metrics and /health only\n",
            head);
      }
    }
  }

  private static void respond(HttpExchange exchange, int code, String type, String body, boolean head)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    if (head) {
      exchange.sendResponseHeaders(code, -1);
      return;
    }
    exchange.sendResponseHeaders(code, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** {@code {"status":"UP","reasons":[]}}, each reason {@code {"code":"...","message":"..."}} as Health has it. */
  static String json(Health health) {
    List<Map<String, String>> reasons = new ArrayList<>();
    for (Health.Reason r : health.reasons()) {
      Map<String, String> reason = new LinkedHashMap<>();
      reason.put("code", r.code());
      reason.put("message", r.message());
      reasons.add(reason);
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", health.status().name());
    body.put("reasons", reasons);
    return Json.write(body);
  }

  /** Stops listening, cutting a scrape in progress: called once the relay has stopped. */
  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
    gc.close();
    registry.close();
  }
}
