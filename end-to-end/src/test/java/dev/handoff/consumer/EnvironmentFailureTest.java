package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.status.PausedWorker;
import dev.handoff.core.ListFormat;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BiConsumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.resps.StreamPendingEntry;

/**
 * The environment's failures are not the messages': a revoked grant, a dropped table or a function the schema lacks
 * pauses the worker, which holds its batch, counts no delivery and dead-letters nothing, and resumes on its own once
 * the cause is gone. The consumer runs as a role of its own (a superuser ignores grants), on both transports.
 */
@HandoffTest
class EnvironmentFailureTest {

  private static final int BEFORE = 20;
  private static final int DURING = 30;

  private final TestEnvironment env;

  EnvironmentFailureTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aGrantRevokedMidRunPausesTheConsumerCountsNoDeliveryAndDeadLettersNothing(Transport transport)
      throws Exception {
    outageMidRun(transport, "revoke", List.of("permission denied"),
        (f, role) -> env.execute("REVOKE INSERT ON " + f.effects + " FROM " + role.name),
        (f, role) -> env.execute("GRANT INSERT ON " + f.effects + " TO " + role.name),
        BEFORE + DURING);
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aTableDroppedAndRecreatedMidRunPausesTheConsumerCountsNoDeliveryAndDeadLettersNothing(Transport transport)
      throws Exception {
    outageMidRun(transport, "drop", List.of("does not exist", "; if that is one of handoff's"),
        (f, role) -> env.execute("DROP TABLE " + f.effects),
        (f, role) -> {
          env.execute("CREATE TABLE " + f.effects
              + " (id bigserial PRIMARY KEY, consumer_group text NOT NULL, message_id uuid NOT NULL, tag text)");
          role.grantAll();
        },
        DURING); // the first ones' rows went with the dropped table
  }

  /** A consumer upgraded before its schema: the seal's function of migration V10 is not there yet. */
  @ParameterizedTest
  @EnumSource(Transport.class)
  void aSchemaWithoutTheSealsFunctionPausesTheConsumerCountsNoDeliveryAndDeadLettersNothing(Transport transport)
      throws Exception {
    String hidden = env.schema() + ".batch_unseal_not_yet(uuid)";
    Runnable mend = () -> env.execute("ALTER FUNCTION " + hidden + " RENAME TO batch_unseal");
    try {
      outageMidRun(transport, "unseal", List.of("function " + env.schema() + ".batch_unseal(uuid) does not exist",
          "; if that is one of handoff's, its schema is not migrated as far as this version needs: apply handoff's"
          + " migrations (HandoffMigrations.migrate, or handoff.jar migrate)"),
          (f, role) -> env.execute("ALTER FUNCTION " + env.schema() + ".batch_unseal(uuid) RENAME TO"
              + " batch_unseal_not_yet"),
          (f, role) -> mend.run(),
          BEFORE + DURING);
    } finally {
      if (env.queryLong("SELECT count(*) FROM pg_proc WHERE oid = to_regprocedure(?)", hidden) == 1) {
        mend.run(); // the other tests of this schema need it back
      }
    }
  }

  /**
   * {@value #BEFORE} messages handled; the environment broken; {@value #DURING} more published and held through a
   * long pause that counts nothing; the environment mended; then every message handled once, nothing dead-lettered,
   * one pause and one resumption.
   */
  private void outageMidRun(Transport transport, String name, List<String> reason,
      BiConsumer<Fixture, ConsumerRole> breakIt, BiConsumer<Fixture, ConsumerRole> mendIt, long effectsAfter)
      throws Exception {
    Fixture f = new Fixture(env, name + "-" + transport.name().toLowerCase());
    String group = name + "-" + transport.name().toLowerCase();
    OutcomeCounts events = new OutcomeCounts();
    try (ConsumerRole role = new ConsumerRole(env);
        Relay relay = TransportSide.relay(env, f.topic, transport).build();
        HandoffConsumer consumer = consumer(transport, f, group, role, events)) {
      List<UUID> first = ids(TransportSide.append(env, f.topic, BEFORE, i -> "before"));
      TransportSide.publishAll(env, relay);
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, first, Duration.ofSeconds(20));

      breakIt.accept(f, role);
      List<UUID> during = ids(TransportSide.append(env, f.topic, DURING, i -> "during"));
      TransportSide.publishAll(env, relay);
      PausedWorker pause = awaitLongPause(consumer);
      assertThat(pause.reason()).contains(reason.toArray(String[]::new));
      assertUncounted(transport, f, group);

      mendIt.accept(f, role);
      ConsumerTestKit.awaitProcessed(consumer, during, Duration.ofSeconds(30));
      // the worker reports its resumption after the step that committed returns: wait for it, not for the commit
      ConsumerTestKit.await("the worker resumed", Duration.ofSeconds(30), () -> events.resumed.get() == 1);

      assertThat(consumer.status().paused()).isEmpty();
      assertThat(consumer.status().deadLetters()).isZero();
      assertThat(f.effectCount(group)).isEqualTo(effectsAfter);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.inboxCount(group, "processed")).isEqualTo(BEFORE + DURING);
      assertThat(events.failed).hasValue(0);
      assertThat(events.deadLettered).hasValue(0);
      assertThat(events.paused).hasValue(1);
      assertThat(events.resumed).hasValue(1);
    }
  }

  /**
   * Waits until the worker has been paused for longer than the stream consumer's {@code minIdle} and has failed
   * several retries: long enough that a counted outage would have dead-lettered (maxDeliveries 2) and an unrenewed
   * entry would have been reclaimed.
   */
  private static PausedWorker awaitLongPause(HandoffConsumer consumer) {
    ConsumerTestKit.await("a pause with retries past minIdle", Duration.ofSeconds(30), () -> {
      List<PausedWorker> paused = consumer.status().paused();
      return paused.size() == 1 && paused.get(0).retries() >= 4
          && Duration.between(paused.get(0).since(), Instant.now()).toMillis() > 2_500;
    });
    return consumer.status().paused().get(0);
  }

  /** During the outage the held work shows no delivery beyond its first. */
  private void assertUncounted(Transport transport, Fixture f, String group) {
    if (transport == Transport.STREAM) {
      List<StreamPendingEntry> pending = f.pending(group);
      assertThat(pending).hasSize(DURING)
          .allSatisfy(p -> assertThat(p.getDeliveredTimes()).isEqualTo(1));
    } else {
      String list = ListFormat.listKey(env.keyPrefix(), f.topic, 0);
      assertThat(env.redis().hlen(ListFormat.deliveriesKey(list))).isZero();
    }
  }

  private HandoffConsumer consumer(Transport transport, Fixture f, String group, ConsumerRole role, OutcomeCounts events) {
    MessageHandler handler = effect(f, group);
    if (transport == Transport.STREAM) {
      return StreamConsumer.builder(role.dataSource, env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
          .topic(f.topic).group(group).handler(handler).workers(1).batchSize(DURING).maxDeliveries(2)
          .block(Duration.ofMillis(100)).minIdle(Duration.ofSeconds(1)).leaseRenewInterval(Duration.ofMillis(200))
          .reclaimInterval(Duration.ofMillis(50)).backoff(Duration.ofMillis(50), Duration.ofMillis(200))
          .listener(events).build();
    }
    return ListConsumer.builder(role.dataSource, env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(f.topic).group(group).handler(handler).workers(1).batchSize(DURING).maxDeliveries(2)
        .block(Duration.ofMillis(100)).heartbeatTtl(Duration.ofSeconds(5)).heartbeatInterval(Duration.ofMillis(500))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).listener(events).build();
  }

  /** The fixture's effect, written with the table's name resolved on the role's search path. */
  private static MessageHandler effect(Fixture f, String group) {
    return (tx, m) -> {
      try (PreparedStatement ps =
          tx.prepareStatement("INSERT INTO " + f.effects + " (consumer_group, message_id) VALUES (?, ?)")) {
        ps.setString(1, group);
        ps.setObject(2, m.messageId());
        ps.executeUpdate();
      }
    };
  }

  private static List<UUID> ids(List<dev.handoff.outbox.AppendedMessage> appended) {
    return appended.stream().map(dev.handoff.outbox.AppendedMessage::messageId).toList();
  }

  /** A login role that is not a superuser, with every grant on the test's schema, and a pool that logs in as it. */
  private static final class ConsumerRole implements AutoCloseable {
    final String name = "consumer_" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 8);
    final HikariDataSource dataSource = new HikariDataSource();
    private final TestEnvironment env;

    ConsumerRole(TestEnvironment env) {
      this.env = env;
      env.execute("CREATE ROLE " + name + " LOGIN PASSWORD 'secret'");
      grantAll();
      // without the URL's own user parameter, which would win over the pool's user
      dataSource.setJdbcUrl(env.postgres().jdbcUrl().replaceFirst("\\?.*$", ""));
      dataSource.setUsername(name);
      dataSource.setPassword("secret");
      dataSource.setSchema(env.schema());
      dataSource.setMaximumPoolSize(4);
    }

    void grantAll() {
      env.execute("GRANT USAGE ON SCHEMA " + env.schema() + " TO " + name,
          "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + env.schema() + " TO " + name,
          "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + env.schema() + " TO " + name);
    }

    @Override
    public void close() {
      dataSource.close();
      env.execute("DROP OWNED BY " + name, "DROP ROLE " + name);
    }
  }
}
