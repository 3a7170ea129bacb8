package dev.handoff.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testkit.ConsumerTestKit;
import java.net.URI;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Run by {@link WithoutMicrometerTest} in a JVM whose class path lacks Micrometer: appends, relays and consumes
 * through the builders that have a {@code meterRegistry} option, without calling it.
 * Arguments: JDBC URL, user, password, schema, key prefix, Redis URI, topic.
 */
final class WithoutMicrometerMain {

  private WithoutMicrometerMain() {}

  public static void main(String[] args) throws Exception {
    HikariDataSource db = new HikariDataSource();
    db.setJdbcUrl(args[0]);
    db.setUsername(args[1]);
    db.setPassword(args[2].equals("null") ? null : args[2]);
    db.setMaximumPoolSize(4);
    String schema = args[3];
    String prefix = args[4];
    URI redisUri = URI.create(args[5]);
    String topic = args[6];
    try {
      Class.forName("io.micrometer.core.instrument.MeterRegistry");
      System.out.println("micrometer=present");
    } catch (ClassNotFoundException e) {
      System.out.println("micrometer=absent");
    }
    Outbox outbox = Outbox.builder().schema(schema).build();
    try (Connection tx = db.getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 3; i++) {
        outbox.append(tx, Message.builder(topic, "test.event").key("k" + i).payload("{}").build());
      }
      tx.commit();
    }
    try (Relay relay = Relay.builder(db, RedisConnectionSpec.of(redisUri)).schema(schema).keyPrefix(prefix)
        .topic(topic).metricsRefreshInterval(Duration.ofSeconds(1)).build()) {
      System.out.println("published=" + relay.relayOnce().published());
    }
    AtomicInteger handled = new AtomicInteger();
    try (StreamConsumer consumer = StreamConsumer.builder(db, RedisConnectionSpec.of(redisUri)).schema(schema).keyPrefix(prefix)
        .topic(topic).group("plain").block(Duration.ofMillis(100)).metricsRefreshInterval(Duration.ofSeconds(1))
        .handler((tx, m) -> handled.incrementAndGet()).build()) {
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(20));
    }
    db.close();
    System.out.println("handled=" + handled.get());
  }
}
