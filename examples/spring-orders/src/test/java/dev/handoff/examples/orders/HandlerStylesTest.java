package dev.handoff.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.outbox.Message;
import dev.handoff.spring.HandoffConsumers;
import dev.handoff.spring.TransactionalOutbox;
import dev.handoff.testkit.ConsumerTestKit;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Every way a Spring team writes a handler keeps once-per-group: a message that fails after its effect until it is
 * dead-lettered leaves no effect, and once fixed and retried, exactly one. Handlers that try to end the batch's
 * transaction are refused or detected, and their failure shows in their dead letter.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    "management.endpoints.web.exposure.include=health,handoff",
    "management.endpoint.health.show-details=always"})
@Import(StyleListeners.class)
class HandlerStylesTest {

  private static final String SCHEMA = "styles_test";
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  @DynamicPropertySource
  static void servers(DynamicPropertyRegistry registry) {
    TestInfrastructure.properties(SCHEMA).forEach((k, v) -> registry.add(k, () -> v));
    registry.add("handoff.topics.styles.shards", () -> "2");
    registry.add("handoff.topics.misbehaving.shards", () -> "1");
    for (String g : List.of(StyleListeners.STYLES)) {
      group(registry, g);
    }
    for (String g : List.of(StyleListeners.MISBEHAVING)) {
      group(registry, g);
    }
  }

  private static void group(DynamicPropertyRegistry registry, String group) {
    registry.add("handoff.consumers." + group + ".max-deliveries", () -> "3");
    registry.add("handoff.consumers." + group + ".initial-backoff", () -> "20ms");
  }

  @Autowired TransactionalOutbox outbox;
  @Autowired TransactionTemplate transactions;
  @Autowired JdbcTemplate jdbc;
  @Autowired HandoffConsumers consumers;
  @Autowired DataSource dataSource;
  @Autowired OrderService orders;
  @Autowired MeterRegistry meters;
  @LocalServerPort int port;

  @AfterEach
  void cure() {
    Poison.KEYS.clear();
  }

  @Test
  void eachHandlerStyleLeavesNoEffectOfADeadLetteredMessageAndExactlyOneOnceFixedAndRetried() {
    Poison.KEYS.add("o-1");
    append("styles", "o-1");
    for (String group : StyleListeners.STYLES) {
      awaitDeadLetters("styles", group, 1);
      assertThat(effects(group, "o-1")).as("effects of the dead-lettered message in %s", group).isZero();
    }

    Poison.KEYS.clear(); // the fix
    DeadLetterAdmin admin = DeadLetterAdmin.builder(dataSource).schema(SCHEMA + "_handoff").build();
    for (String group : StyleListeners.STYLES) {
      assertThat(admin.requestRetry(group, DeadLetterSelection.all()).requested()).isEqualTo(1);
      // Runs the request now, unless the group's own upkeep (every retry-request interval) took it first: either
      // way it runs once, so the test waits for its outcome rather than counting who ran it.
      consumer("styles", group).maintainOnce();
      ConsumerTestKit.await("the retry of " + group + " ran", DEADLINE, () -> consumer("styles", group)
          .deadLetters(10).stream().allMatch(d -> d.status().equals("retried")));
      assertThat(effects(group, "o-1")).as("effects after the retry in %s", group).isEqualTo(1);
      assertThat(consumer("styles", group).deadLetters(10)).extracting(DeadLetter::status).containsExactly("retried");
    }

    append("styles", "o-2");
    for (String group : StyleListeners.STYLES) {
      ConsumerTestKit.await("o-2 handled in " + group, DEADLINE, () -> effects(group, "o-2") == 1);
      ConsumerTestKit.awaitDrained((dev.handoff.consumer.StreamConsumer) consumer("styles", group), DEADLINE);
      assertThat(effects(group, "o-2")).isEqualTo(1);
    }
  }

  @Test
  void handlersThatEndTheBatchTransactionAreRefusedOrDetectedAndNothingIsMarkedProcessed() {
    append("misbehaving", "m-1");
    Map<String, String> expected = Map.of(
        "commits", "must not call commit()",
        "rolls-back", "must not call rollback()",
        "executes-commit", "handoff: a handler ended its consumer batch's transaction",
        "requires-new", "started a transaction of its own (REQUIRES_NEW or NOT_SUPPORTED)",
        "own-connection", "asked the application's DataSource for a connection");
    for (String group : StyleListeners.MISBEHAVING) {
      List<DeadLetter> dead = awaitDeadLetters("misbehaving", group, 1);
      assertThat(dead.get(0).error()).as("dead letter of %s", group).contains(expected.get(group));
      assertThat(effects(group, "m-1")).as("effects of %s", group).isZero();
      assertThat(jdbc.queryForList("SELECT outcome FROM " + SCHEMA + "_handoff.inbox WHERE consumer_group = ?",
          String.class, group)).as("inbox of %s", group).containsExactly("dead");
    }
  }

  @Test
  void aTransactionalProducerThatRollsBackLeavesNoOutboxRowAndOneThatCommitsLeavesExactlyOne() {
    assertThatThrownBy(() -> transactions.executeWithoutResult(status -> {
      outbox.append(Message.builder("orders", "order-placed").key("rolled-back").payload("1").build());
      throw new IllegalStateException("the order is refused after its message was appended");
    })).hasMessageContaining("refused after");
    assertThat(outboxRows("rolled-back")).isZero();

    orders.placeOrder("committed", 1250);
    assertThat(outboxRows("committed")).isEqualTo(1);
    assertThat(jdbc.queryForObject("SELECT count(*) FROM orders WHERE id = 'committed'", Long.class)).isEqualTo(1);

    assertThatThrownBy(() -> outbox.append(Message.builder("orders", "order-placed").key("none").build()))
        .isInstanceOf(IllegalTransactionStateException.class)
        .hasMessage("handoff: an append to topic 'orders' needs a Spring transaction on the application's DataSource,"
            + " and none runs on this thread; call it from a @Transactional method, so that the message is"
            + " published only if the transaction commits");
    assertThat(outboxRows("none")).isZero();
  }

  @Test
  void theExampleInvoicesAndShipsEachOrderOnceAndActuatorReportsEveryGroup() throws Exception {
    orders.placeOrder("o-100", 4200);
    ConsumerTestKit.await("o-100 invoiced and shipped", DEADLINE, () ->
        jdbc.queryForObject("SELECT count(*) FROM invoice WHERE order_id = 'o-100'", Long.class) == 1
            && jdbc.queryForObject("SELECT count(*) FROM shipment WHERE order_id = 'o-100'", Long.class) == 1);
    ConsumerTestKit.awaitDrained((dev.handoff.consumer.StreamConsumer) consumer("orders", "invoicing"), DEADLINE);
    ConsumerTestKit.awaitDrained((dev.handoff.consumer.StreamConsumer) consumer("orders", "shipping"), DEADLINE);
    assertThat(jdbc.queryForObject("SELECT amount_cents FROM invoice WHERE order_id = 'o-100'", Long.class))
        .isEqualTo(4200);

    HttpResponse<String> health = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/health/handoff")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).contains("\"status\":\"UP\"", "\"relay\"", "\"orders/invoicing\"",
        "\"orders/shipping\"", "\"styles/jpa\"");

    HttpResponse<String> group = get("/actuator/handoff/orders/invoicing");
    assertThat(group.statusCode()).isEqualTo(200);
    assertThat(group.body()).contains("\"group\":\"invoicing\"", "\"backlog\":0", "\"pending\":0",
        "\"deadLetters\":0", "\"drained\":true");
    assertThat(get("/actuator/handoff").body()).contains("\"orders/invoicing\"", "\"styles/jdbc-template\"");
    assertThat(get("/actuator/handoff/orders/nobody").statusCode()).isEqualTo(404);

    assertThat(meters.find("handoff.outbox.appended").counters()).as("the outbox's meters").isNotEmpty();
    assertThat(meters.find("handoff.consumer.backlog").tag("group", "invoicing").gauges())
        .as("the invoicing group's meters").isNotEmpty();
    assertThat(meters.find("handoff.relay.leases.owned").gauges()).as("the relay's meters").isNotEmpty();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private void append(String topic, String key) {
    transactions.executeWithoutResult(status ->
        outbox.append(Message.builder(topic, "test").key(key).payload("1").build()));
  }

  private HandoffConsumer consumer(String topic, String group) {
    return consumers.consumer(topic, group).orElseThrow();
  }

  private List<DeadLetter> awaitDeadLetters(String topic, String group, int count) {
    HandoffConsumer c = consumer(topic, group);
    ConsumerTestKit.await(count + " dead letter(s) in " + group, DEADLINE, () -> c.deadLetters(10).size() >= count);
    List<DeadLetter> dead = c.deadLetters(10);
    assertThat(dead).hasSize(count);
    return dead;
  }

  private long effects(String group, String key) {
    return jdbc.queryForObject("SELECT count(*) FROM effect WHERE grp = ? AND order_id = ?", Long.class, group, key);
  }

  private long outboxRows(String key) {
    return jdbc.queryForObject("SELECT count(*) FROM " + SCHEMA + "_handoff.outbox WHERE message_key = ?", Long.class,
        key);
  }
}
