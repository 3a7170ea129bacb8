package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.admin.RetryRequestResult;
import dev.handoff.consumer.admin.RewindPlan;
import dev.handoff.consumer.admin.RewindTarget;
import dev.handoff.consumer.admin.StreamAdmin;
import dev.handoff.consumer.admin.TrimReport;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.RedisUrl;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.params.XReadGroupParams;

/**
 * The Java examples of docs/operations.md that run against the consumer module, line for line (DocExamplesTest
 * checks it): the health endpoint, the builders' meter registry, {@code DeadLetterAdmin} and {@code StreamAdmin}.
 * Those written with handoff's default schema and key prefix run as written, in a database and a Redis of the
 * test's own.
 */
@HandoffTest
class OperationsDocExamplesTest {

  private static final Duration DEADLINE = Duration.ofSeconds(30);

  private final TestEnvironment env;
  private HttpServer server;

  OperationsDocExamplesTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void theHealthEndpointAnswers503WhileAPartIsDownAnd200Otherwise() throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.start();
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
            .topic("orders").build();
        StreamConsumer consumer = StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix()).topic("orders").group("probe").handler((tx, message) -> { }).build()) {

      get("/health/live", (req, res) -> {
        Health r = relay.health();
        Health c = consumer.health();
        boolean down = r.status() == Health.Status.DOWN || c.status() == Health.Status.DOWN;
        res.status(down ? 503 : 200);
        return r.reasons().toString() + c.reasons();
      });

      HttpResponse<String> notStarted = probe();
      assertThat(notStarted.statusCode()).isEqualTo(503);
      assertThat(notStarted.body()).contains("code=not-started");

      relay.start();
      consumer.start();
      ConsumerTestKit.await("the probe answers 200 with no reason", DEADLINE, () -> {
        HttpResponse<String> up = probe();
        return up.statusCode() == 200 && up.body().equals("[][]");
      });

      consumer.close();
      HttpResponse<String> closed = probe();
      assertThat(closed.statusCode()).isEqualTo(503);
      assertThat(closed.body()).startsWith("[][Reason[code=closed, ");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void theBuildersPublishTheirMetersToTheRegistry() throws Exception {
    DataSource dataSource = env.newDatabase();
    HandoffMigrations.migrate(dataSource);
    RedisConnectionSpec redis = env.privateRedis().spec();
    MeterRegistry registry = new SimpleMeterRegistry();
    String topic = "payments";
    DocLedger ledger = new DocLedger(dataSource, HandoffMigrations.DEFAULT_SCHEMA);

    Outbox outbox = Outbox.builder().meterRegistry(registry).build();
    Relay relay = Relay.builder(dataSource, redis).topic(topic).meterRegistry(registry).build();
    StreamConsumer consumer = StreamConsumer.builder(dataSource, redis).topic(topic).group("ledger")
        .handler((tx, message) -> ledger.charge(tx, message)).meterRegistry(registry).build();

    List<UUID> ids = new ArrayList<>();
    try (relay; consumer; Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 5; i++) {
        ids.add(outbox.append(tx, Message.builder(topic, "payment.created").key("pay-" + i).payload("100").build())
            .messageId());
      }
      tx.commit();
      relay.start();
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, ids, DEADLINE);
      ConsumerTestKit.await("5 published and 5 handled on the meters", DEADLINE,
          () -> sum(registry, "handoff.relay.published") == 5 && sum(registry, "handoff.consumer.handled") == 5);
    }

    assertThat(registry.get("handoff.outbox.appended").tag("topic", "payments").counter().count()).isEqualTo(5);
    assertThat(registry.get("handoff.relay.published").tag("topic", "payments").tag("shard", "0").counter().count())
        .isEqualTo(5);
    assertThat(registry.get("handoff.consumer.handled").tag("topic", "payments").tag("group", "ledger").counter()
        .count()).isEqualTo(5);
    assertThat(ledger.charges("payments")).isEqualTo(5);
  }

  @Test
  void deadLetterAdminListsRequestsRetriesAndPurges() throws Exception {
    DataSource dataSource = env.newDatabase();
    HandoffMigrations.migrate(dataSource);
    List<UUID> ids = new ArrayList<>();
    Outbox producer = Outbox.builder().build();
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 3; i++) {
        ids.add(producer.append(tx, Message.builder("invoices", "invoice.due").key("inv-" + i).build()).messageId());
      }
      tx.commit();
    }
    try (Relay relay = Relay.builder(dataSource, env.redisSpec()).keyPrefix(env.keyPrefix()).topic("invoices").build();
        StreamConsumer consumer = StreamConsumer.builder(dataSource, env.redisSpec()).keyPrefix(env.keyPrefix())
            .topic("invoices").group("billing").maxDeliveries(1)
            .handler((tx, message) -> {
              throw new IllegalStateException("no account for " + message.key());
            }).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(3);
      ConsumerTestKit.drain(consumer, DEADLINE);
      assertThat(consumer.deadLetters(10)).hasSize(3);
    }

    DeadLetterAdmin admin = DeadLetterAdmin.builder(dataSource).schema("handoff").build();
    List<DeadLetter> recent = admin.list("billing", DeadLetterSelection.deadSince(Instant.now().minus(Duration.ofHours(2))), 100);
    RetryRequestResult r = admin.requestRetry("billing", DeadLetterSelection.all()); // r.requested(), r.notRetryable()
    long purged = admin.purge("billing", DeadLetterSelection.id(recent.get(0).id()));

    assertThat(recent).extracting(DeadLetter::messageId).containsExactlyInAnyOrderElementsOf(ids);
    assertThat(recent).allSatisfy(d -> assertThat(d.error()).contains("no account for inv-"));
    assertThat(r).isEqualTo(new RetryRequestResult(3, 0));
    assertThat(purged).isEqualTo(1);
    assertThat(admin.show(recent.get(0).id())).isEmpty();
    assertThat(admin.list("billing", DeadLetterSelection.all(), 100)).extracting(DeadLetter::id)
        .containsExactlyInAnyOrder(recent.get(1).id(), recent.get(2).id())
        .allSatisfy(id -> assertThat(admin.show(id).orElseThrow().retry().requestedAt()).isNotNull());
  }

  @Test
  void streamAdminPlansARewindToATimeAndTrimsWhatTheGroupFinished() throws Exception {
    DataSource dataSource = env.newDatabase();
    HandoffMigrations.migrate(dataSource);
    String redisUrl = env.privateRedis().uri().toString();
    RedisClient redis = env.newRedisClient(URI.create(redisUrl));
    // Five entries of payments around 2026-12-01T10:00:00Z, all read and acknowledged by billing.
    long at = Instant.parse("2026-12-01T10:00:00Z").toEpochMilli();
    String key = StreamFormat.streamKey("handoff", "payments", 0);
    List<String> entryIds = new ArrayList<>();
    for (long ms : new long[] {at - 2000, at - 1000, at, at + 1000, at + 2000}) {
      StreamMessage m = new StreamMessage(UUID.randomUUID(), ms, "payments", "payment.created", "pay-" + ms,
          Map.of(), Instant.ofEpochMilli(ms).truncatedTo(ChronoUnit.MILLIS), "{}".getBytes(StandardCharsets.UTF_8));
      redis.xadd(key.getBytes(StandardCharsets.UTF_8), XAddParams.xAddParams().id(ms + "-0"), StreamFormat.encode(m));
      entryIds.add(ms + "-0");
    }
    redis.xgroupCreate(key, "billing", new StreamEntryID(0, 0), false);
    redis.xreadGroup("billing", "billing-1", XReadGroupParams.xReadGroupParams().count(10),
        Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    assertThat(redis.xack(key, "billing", entryIds.stream().map(StreamEntryID::new).toArray(StreamEntryID[]::new)))
        .isEqualTo(5);

    try (StreamAdmin admin = StreamAdmin.builder(RedisConnectionSpec.of(RedisUrl.parse(redisUrl))) // "redis://cache:6379"
        .keyPrefix("handoff").dataSource(dataSource).schema("handoff").build()) {
      RewindPlan plan = admin.rewind("payments", "billing", RewindTarget.time(Instant.parse("2026-12-01T10:00:00Z")),
          true);                                  // dry run: plan.comeAgain() per shard, nothing changed
      TrimReport report = admin.trim("payments", false);

      assertThat(plan.dryRun()).isTrue();
      assertThat(plan.comeAgain()).as("the entries at and after 10:00:00").isEqualTo(3);
      assertThat(plan.shards()).singleElement().satisfies(s -> {
        assertThat(s.lastDeliveredBefore()).isEqualTo(entryIds.get(4));
        assertThat(s.setTo()).isEqualTo((at - 1) + "-" + Long.MAX_VALUE);
        assertThat(s.exact()).isTrue();
        assertThat(s.pending()).isZero();
      });
      assertThat(report.dryRun()).isFalse();
      assertThat(report.shards()).singleElement().satisfies(s -> {
        assertThat(s.lengthBefore()).isEqualTo(5);
        assertThat(s.lengthAfter()).isEqualTo(5 - s.removed());
      });
      assertThat(report.removed()).as("everything below the group's last-delivered entry").isEqualTo(4);
    }
    assertThat(redis.xrange(key, "-", "+")).extracting(e -> e.getID().toString()).containsExactly(entryIds.get(4));
    assertThat(redis.xinfoGroups(key).get(0).getLastDeliveredId().toString())
        .as("the dry run left the group where it was").isEqualTo(entryIds.get(4));
  }

  /** The total of the counters named {@code name}, whatever their tags. */
  private static double sum(MeterRegistry registry, String name) {
    return registry.find(name).counters().stream().mapToDouble(Counter::count).sum();
  }

  private HttpResponse<String> probe() {
    try {
      return HttpClient.newHttpClient().send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/health/live")).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * The part of a web framework that the health example is written against (Spark's {@code get(path, route)}), on
   * the JDK's HTTP server: the route's return value is the body, {@code res.status(code)} the status.
   */
  private void get(String path, Route route) {
    server.createContext(path, exchange -> {
      Response res = new Response();
      byte[] body;
      try {
        body = String.valueOf(route.handle(exchange, res)).getBytes(StandardCharsets.UTF_8);
      } catch (Exception e) {
        res.status(500);
        body = e.toString().getBytes(StandardCharsets.UTF_8);
      }
      exchange.sendResponseHeaders(res.status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
  }

  /** A route of {@link #get}. */
  @FunctionalInterface
  private interface Route {
    Object handle(HttpExchange req, Response res) throws Exception;
  }

  /** What a route sets of its response. */
  private static final class Response {

    private int status = 200;

    void status(int status) {
      this.status = status;
    }
  }
}
