package dev.handoff.consumer;

import static dev.handoff.consumer.FailoverLedger.DEADLINE;
import static dev.handoff.consumer.FailoverLedger.SCHEMA;
import static dev.handoff.consumer.FailoverLedger.TOPIC;
import static dev.handoff.consumer.FailoverLedger.awaitPrimary;
import static dev.handoff.consumer.FailoverLedger.awaitPublished;
import static dev.handoff.consumer.FailoverLedger.chargedOnce;
import static dev.handoff.consumer.FailoverLedger.consumer;
import static dev.handoff.consumer.FailoverLedger.count;
import static dev.handoff.consumer.FailoverLedger.drain;
import static dev.handoff.consumer.FailoverLedger.failoverReport;
import static dev.handoff.consumer.FailoverLedger.messageIds;
import static dev.handoff.consumer.FailoverLedger.neverCharged;
import static dev.handoff.consumer.FailoverLedger.orphans;
import static dev.handoff.consumer.FailoverLedger.outboxMessageIds;
import static dev.handoff.consumer.FailoverLedger.pay;
import static dev.handoff.consumer.FailoverLedger.pollTimes;
import static dev.handoff.consumer.FailoverLedger.pool;
import static dev.handoff.consumer.FailoverLedger.prepare;
import static dev.handoff.consumer.FailoverLedger.relay;
import static dev.handoff.consumer.FailoverLedger.stream;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.FailoverLedger.Producer;
import dev.handoff.consumer.FailoverLedger.Rewound;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.TopicInspector.FailoverReport;
import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.StreamingReplication;
import dev.handoff.testing.TestServers;
import dev.handoff.testkit.ConsumerTestKit;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.resps.StreamEntry;

/**
 * A real PostgreSQL failover: a primary and a streaming standby of the test's own ({@link StreamingReplication}),
 * every component on the multi-host URL, the primary SIGKILLed and the standby promoted.
 *
 * <p>Asynchronous replication with the standby held back (its WAL sender stopped) loses the last commits. The test
 * walks the failure step by step, so that each loss is exact: payments committed and published that the new primary
 * does not have (their entries are ghosts), and charges committed and acknowledged that it does not have. It checks
 * what handoff does about each: the relay reports the rewind, a consumer that refuses ghosts charges no payment that
 * does not exist, and the runbook's replay charges every payment of the new primary exactly once.
 */
class DatabaseFailoverTest {

  @Test
  void anAsynchronousStandbyPromotedAfterThePrimaryDiedIsReportedAndRepaired() throws Exception {
    String prefix = "failover-" + UUID.randomUUID().toString().substring(0, 8);
    List<Rewound> rewinds = new CopyOnWriteArrayList<>();
    try (StreamingReplication pg = StreamingReplication.start();
        HikariDataSource db = pool(pg);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(2))) {
      Outbox outbox = prepare(db, redis, prefix);
      Instant start = Instant.now().minusSeconds(60);
      MeterRegistry meters = new SimpleMeterRegistry();
      try (LogCapture logs = LogCapture.start();
          Relay relay = relay(db, RedisConnectionSpec.of(TestServers.redis()), prefix, rewinds).meterRegistry(meters).build();
          StreamConsumer billing = consumer(db, prefix, "billing", false);
          StreamConsumer refusing = consumer(db, prefix, "refusing", true);
          StreamConsumer applying = consumer(db, prefix, "applying", false)) {
        for (StreamConsumer c : List.of(billing, refusing, applying)) {
          c.pollOnce(); // its group exists from the stream's start
        }
        relay.start(); // it runs through the failover, as a relay beside the application does
        // Before the standby falls behind: 40 payments, published; billing charges 30 of them, refusing all 40.
        pay(db, outbox, 0, 40);
        awaitPublished(db);
        pollTimes(billing, 3);
        drain(refusing);
        drain(applying);
        pg.awaitStandbyCaughtUp();

        // The standby receives nothing more: what follows exists on the primary alone.
        pg.pauseWalSender();
        drain(billing); // charges the last 10 of the 40, and acknowledges them
        pay(db, outbox, 40, 20);
        awaitPublished(db);
        drain(billing); // charges the 20 new ones too
        assertThat(count(db, "SELECT count(*) FROM charge WHERE consumer_group = 'billing'")).isEqualTo(60);
        assertThat(redis.xlen(stream(prefix))).isEqualTo(60);

        pg.killPrimary();
        pg.promoteStandby();
        awaitPrimary(db);

        // What the new primary has: the first 40 payments, and billing's first 30 charges.
        assertThat(count(db, "SELECT count(*) FROM payment")).isEqualTo(40);
        assertThat(count(db, "SELECT count(*) FROM charge WHERE consumer_group = 'billing'")).isEqualTo(30);
        assertThat(count(db, "SELECT count(*) FROM " + SCHEMA + ".outbox")).isEqualTo(40);

        // New payments on the new primary; the relay publishes them and reports the rewind it meets.
        pay(db, outbox, 60, 5);
        awaitPublished(db);

        // The relay reports once its mark committed, which is what awaitPublished sees: wait for the report too.
        ConsumerTestKit.await("the rewind reported", DEADLINE, () -> !rewinds.isEmpty());
        assertThat(rewinds).containsExactly(new Rewound(new ShardId(TOPIC, 0), 20));
        assertThat(logs.warnings()).filteredOn(l -> l.contains("the database went back in time")).singleElement()
            .asString().startsWith("ERROR").contains("(Redis counts 60 added, the database 40)");
        assertThat(relay.health().reasons()).extracting(Health.Reason::code).contains("database-rewound");
        assertThat(meters.get("handoff.relay.database.rewound").counter().count()).isEqualTo(20);
        List<StreamEntry> entries = redis.xrange(stream(prefix), (StreamEntryID) null, (StreamEntryID) null);
        assertThat(entries).hasSize(65);
        assertThat(entries.stream().map(e -> e.getFields().get(StreamFormat.MESSAGE_ID)).distinct()).hasSize(65);
        // The report, against an independent read of the stream: the ghosts are exactly p40..p59.
        FailoverReport report = failoverReport(db, prefix);
        assertThat(report.clean()).isFalse();
        assertThat(report.streams()).singleElement().satisfies(f -> {
          assertThat(f.entries()).isEqualTo(65);
          assertThat(f.ghosts()).isEqualTo(20);
          assertThat(f.ghostIds()).containsExactlyElementsOf(messageIds(entries, 40, 60));
          assertThat(f.publishedTwice()).isZero();
        });

        // Ghosts refused: refusing charges the 5 new payments and dead-letters the 20 the database lost.
        drain(refusing);
        assertThat(chargedOnce(db, "refusing")).isTrue();
        assertThat(orphans(db, "refusing")).isZero();
        assertThat(count(db, "SELECT count(*) FROM " + SCHEMA + ".dead_letter WHERE consumer_group = 'refusing'"
            + " AND error LIKE 'ghost:%'")).isEqualTo(20);
        // Without the setting, the 20 ghosts are charged: payments that do not exist.
        drain(applying);
        assertThat(orphans(db, "applying")).isEqualTo(20);

        // Billing acknowledged 30 charges the new primary does not have: 10 of them for payments it has.
        drain(billing);
        assertThat(neverCharged(db, "billing")).isEqualTo(10);
        DeadLetterAdmin admin = DeadLetterAdmin.builder(db).schema(SCHEMA).build();
        long request = admin.requestReplay("billing", TOPIC, start, null);
        assertThat(billing.maintainOnce()).isEqualTo(1);

        assertThat(admin.replayRequest(request)).hasValueSatisfying(r -> {
          assertThat(r.finishedAt()).isNotNull();
          assertThat(r.handled()).isEqualTo(10);
          assertThat(r.duplicates()).isEqualTo(35);
          assertThat(r.failed()).isZero();
        });
        assertThat(neverCharged(db, "billing")).isZero();
        assertThat(chargedOnce(db, "billing")).isTrue();
        assertThat(orphans(db, "billing")).isZero();
        assertThat(redis.xlen(stream(prefix))).isEqualTo(65); // the replay wrote nothing to Redis
      }
    }
  }

  /**
   * The relay that runs through the failover took its lease after the standby stopped receiving, so the new primary
   * never saw it take the lease, nor mark the rows it published then. Five payments committed before the standby
   * stopped, and published after, are published again: twice in the stream. The relay reports the rewind when it
   * takes its lease again, and the report lists the 20 ghosts and the 5 messages published twice.
   */
  @Test
  void rowsWhoseMarksTheDatabaseLostArePublishedAgainAndReported() throws Exception {
    String prefix = "failover-" + UUID.randomUUID().toString().substring(0, 8);
    List<Rewound> rewinds = new CopyOnWriteArrayList<>();
    try (StreamingReplication pg = StreamingReplication.start();
        HikariDataSource db = pool(pg);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(2))) {
      Outbox outbox = prepare(db, redis, prefix);
      try (LogCapture logs = LogCapture.start();
          StreamConsumer refusing = consumer(db, prefix, "refusing", true)) {
        refusing.pollOnce();
        try (Relay first = relay(db, RedisConnectionSpec.of(TestServers.redis()), prefix, rewinds).build()) {
          pay(db, outbox, 0, 40);
          while (first.relayOnce().published() > 0) {
            // until the 40 are published
          }
        } // closed: its lease is handed back
        drain(refusing);
        pay(db, outbox, 40, 5); // committed, not published
        pg.awaitStandbyCaughtUp();

        pg.pauseWalSender();
        try (Relay relay = relay(db, RedisConnectionSpec.of(TestServers.redis()), prefix, rewinds).build()) {
          relay.start(); // takes the lease and publishes p40..p44: all of it on the primary alone
          awaitPublished(db);
          pay(db, outbox, 45, 20);
          awaitPublished(db);
          assertThat(redis.xlen(stream(prefix))).isEqualTo(65);

          pg.killPrimary();
          pg.promoteStandby();
          awaitPrimary(db);
          assertThat(count(db, "SELECT count(*) FROM payment")).isEqualTo(45);
          assertThat(count(db, "SELECT count(*) FROM " + SCHEMA + ".outbox WHERE published_at IS NULL"))
              .isEqualTo(5);

          pay(db, outbox, 65, 5);
          awaitPublished(db);
          ConsumerTestKit.await("the rewind reported", DEADLINE, () -> !rewinds.isEmpty());

          assertThat(rewinds).containsExactly(new Rewound(new ShardId(TOPIC, 0), 25));
          assertThat(logs.warnings()).filteredOn(l -> l.contains("the database went back in time")).singleElement()
              .asString().contains("(Redis counts 65 added, the database 40)", "found while taking its lease");
        }
      }
      List<StreamEntry> entries = redis.xrange(stream(prefix), (StreamEntryID) null, (StreamEntryID) null);
      assertThat(entries).hasSize(75);
      FailoverReport report = failoverReport(db, prefix);
      assertThat(report.streams()).singleElement().satisfies(f -> {
        assertThat(f.entries()).isEqualTo(75);
        assertThat(f.ghosts()).isEqualTo(20);
        assertThat(f.ghostIds()).containsExactlyElementsOf(messageIds(entries, 45, 65));
        assertThat(f.publishedTwice()).isEqualTo(5);
        assertThat(f.publishedTwiceIds()).containsExactlyElementsOf(messageIds(entries, 40, 45));
      });
      // A consumer that refuses ghosts charges every payment of the new primary once, the doubles included.
      try (StreamConsumer refusing = consumer(db, prefix, "refusing", true)) {
        drain(refusing);
      }
      assertThat(count(db, "SELECT count(*) FROM payment")).isEqualTo(50);
      assertThat(chargedOnce(db, "refusing")).isTrue();
      assertThat(orphans(db, "refusing")).isZero();
    }
  }

  @Test
  void aSynchronousStandbyPromotedMidRunLosesNothingAndDoublesNothing() throws Exception {
    String prefix = "failover-" + UUID.randomUUID().toString().substring(0, 8);
    List<Rewound> rewinds = new CopyOnWriteArrayList<>();
    try (StreamingReplication pg = StreamingReplication.startSynchronous();
        HikariDataSource db = pool(pg);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(2))) {
      Outbox outbox = prepare(db, redis, prefix);
      try (Relay relay = relay(db, RedisConnectionSpec.of(TestServers.redis()), prefix, rewinds).build();
          StreamConsumer billing = consumer(db, prefix, "billing", false);
          Producer producer = new Producer(db, outbox)) {
        relay.start();
        billing.start();
        producer.start();
        producer.awaitCommitted(100);

        pg.killPrimary();
        pg.promoteStandby();
        long atPromotion = producer.committed();
        producer.awaitCommitted(atPromotion + 100);
        producer.stop();

        long payments = count(db, "SELECT count(*) FROM payment");
        assertThat(payments).isGreaterThanOrEqualTo(producer.committed());
        ConsumerTestKit.await("every payment charged", DEADLINE, () -> {
          try {
            return neverCharged(db, "billing") == 0;
          } catch (SQLException e) {
            return false;
          }
        });
        assertThat(chargedOnce(db, "billing")).isTrue();
        assertThat(orphans(db, "billing")).isZero();
        assertThat(count(db, "SELECT count(*) FROM " + SCHEMA + ".dead_letter")).isZero();
        assertThat(count(db, "SELECT count(*) FROM " + SCHEMA + ".outbox")).isEqualTo(payments);
        List<StreamEntry> entries = redis.xrange(stream(prefix), (StreamEntryID) null, (StreamEntryID) null);
        Set<String> inStream = new HashSet<>();
        entries.forEach(e -> inStream.add(e.getFields().get(StreamFormat.MESSAGE_ID)));
        assertThat(entries).hasSize((int) payments); // every row added once: no ghost, no second copy
        assertThat(inStream).hasSize((int) payments).isEqualTo(outboxMessageIds(db));
        assertThat(rewinds).isEmpty();
        assertThat(relay.health().status()).isNotEqualTo(Health.Status.DOWN);
        assertThat(billing.health().status()).isNotEqualTo(Health.Status.DOWN);
      }
    }
  }
}
