package dev.handoff.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.core.StreamFormat;
import dev.handoff.spring.HandoffListener;
import dev.handoff.testing.TestServers;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XPendingParams;
import redis.clients.jedis.resps.StreamEntry;
import redis.clients.jedis.resps.StreamGroupInfo;
import redis.clients.jedis.resps.StreamPendingEntry;

/**
 * The application stops while a handler is in the middle of a batch: the relay's leases are released, and no entry is
 * acknowledged without its inbox marker. Started again, the application handles every message, once.
 */
class GracefulShutdownTest {

  private static final String SCHEMA = "shutdown_test";
  private static final Duration DEADLINE = Duration.ofSeconds(60);
  private static final int ORDERS = 20;

  /** Opened by the test when the handler may go on; until then the handler holds its batch open. */
  static volatile CountDownLatch gate = new CountDownLatch(1);
  static final CountDownLatch entered = new CountDownLatch(1);

  @Configuration
  static class HeldListener {
    @Bean
    Held held(JdbcTemplate jdbc) {
      return new Held(jdbc);
    }
  }

  static class Held {
    private final JdbcTemplate jdbc;

    Held(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @HandoffListener(topic = "orders", group = "held")
    public void on(InboundMessage m) throws InterruptedException {
      jdbc.update("INSERT INTO effect (grp, order_id) VALUES ('held', ?)", m.key());
      entered.countDown();
      gate.await();
    }
  }

  @Test
  void aGracefulShutdownWithABatchInFlightReleasesTheLeasesAndAcknowledgesNothingUnprocessed() {
    Map<String, String> props = Map.copyOf(TestInfrastructure.properties(SCHEMA));
    ConfigurableApplicationContext first = start(props);
    OrderService orders = first.getBean(OrderService.class);
    for (int i = 0; i < ORDERS; i++) {
      orders.placeOrder("o-" + i, 100 + i);
    }
    ConsumerTestKit.await("the held handler running", DEADLINE, () -> entered.getCount() == 0);

    first.close(); // the handler is still held: its batch is abandoned at handoff.shutdown-timeout

    try (HikariDataSource db = TestServers.newDataSource(SCHEMA, 2)) {
      checkNothingLeftBehind(new JdbcTemplate(db));
    }
    gate.countDown();
    try (ConfigurableApplicationContext second = start(props)) {
      JdbcTemplate again = second.getBean(JdbcTemplate.class);
      ConsumerTestKit.await("every order handled by the restarted application", DEADLINE, () ->
          count(again, "SELECT count(DISTINCT order_id) FROM effect WHERE grp = 'held'") == ORDERS
              && count(again, "SELECT count(*) FROM invoice") == ORDERS);
      assertThat(count(again, "SELECT count(*) FROM effect WHERE grp = 'held'")).as("effects").isEqualTo(ORDERS);
      assertThat(count(again, "SELECT count(*) FROM invoice")).isEqualTo(ORDERS);
    }
  }

  private static void checkNothingLeftBehind(JdbcTemplate jdbc) {

    assertThat(jdbc.queryForObject("SELECT count(*) FROM " + SCHEMA + "_handoff.relay_lease"
        + " WHERE owner IS NOT NULL AND expires_at > now()", Long.class)).as("relay leases still held").isZero();
    Set<String> processed = new HashSet<>(jdbc.queryForList("SELECT stream_id FROM " + SCHEMA + "_handoff.inbox"
        + " WHERE consumer_group = 'held' AND outcome = 'processed'", String.class));
    assertThat(acknowledged("held")).as("entries acknowledged without an inbox marker").isSubsetOf(processed);
    assertThat(count(jdbc, "SELECT count(*) FROM effect WHERE grp = 'held'"))
        .as("effects of messages not marked processed").isEqualTo(processed.size());
  }

  private static ConfigurableApplicationContext start(Map<String, String> props) {
    List<String> args = new ArrayList<>();
    props.forEach((k, v) -> args.add("--" + k + "=" + v));
    args.addAll(List.of("--handoff.shutdown-timeout=2s", "--spring.main.web-application-type=none",
        "--handoff.consumers.held.batch-size=5", "--handoff.consumers.held.min-idle=2s",
        "--handoff.consumers.invoicing.min-idle=2s", "--handoff.consumers.shipping.min-idle=2s"));
    return new SpringApplicationBuilder(OrdersApplication.class, HeldListener.class).run(args.toArray(String[]::new));
  }

  private static long count(JdbcTemplate jdbc, String sql) {
    return jdbc.queryForObject(sql, Long.class);
  }

  /** The stream IDs the group acknowledged: delivered (at or before its last-delivered ID) and no longer pending. */
  private static Set<String> acknowledged(String group) {
    Set<String> out = new HashSet<>();
    try (RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(5))) {
      String key = StreamFormat.streamKey(SCHEMA, "orders", 0);
      for (int shard = 0; redis.exists(key); key = StreamFormat.streamKey(SCHEMA, "orders", ++shard)) {
        StreamEntryID lastDelivered = redis.xinfoGroups(key).stream()
            .filter(g -> g.getName().equals(group)).map(StreamGroupInfo::getLastDeliveredId).findFirst()
            .orElse(new StreamEntryID(0, 0));
        Set<StreamEntryID> pending = new HashSet<>();
        List<StreamPendingEntry> pel = redis.xpending(key, group, XPendingParams.xPendingParams().count(10_000));
        pel.forEach(p -> pending.add(p.getID()));
        for (StreamEntry e : redis.xrange(key, (StreamEntryID) null, lastDelivered)) {
          if (!pending.contains(e.getID())) {
            out.add(e.getID().toString());
          }
        }
      }
    }
    return out;
  }
}
