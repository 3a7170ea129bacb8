package dev.handoff.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

@HandoffTest(migrate = false)
class HandoffMigrationsTest {

  private static final List<String> TABLES =
      List.of("batch_seal", "consumer_lease", "consumer_member", "dead_letter", "inbox", "outbox", "outbox_purged",
          "relay_lease", "relay_member", "replay_request", "topic");
  private static final int MIGRATIONS = 10;

  @Test
  void appliesOnAFreshDatabaseAndReapplyingIsANoOp(TestEnvironment env) {
    String schema = env.schema() + "_fresh";
    try {
      assertThat(HandoffMigrations.migrate(env.dataSource(), schema)).isEqualTo(MIGRATIONS);
      assertThat(tablesIn(env, schema)).containsExactlyElementsOf(sorted(TABLES, HandoffMigrations.HISTORY_TABLE));
      assertThat(appliedVersions(env, schema)).isEqualTo(MIGRATIONS);

      assertThat(HandoffMigrations.migrate(env.dataSource(), schema)).isZero();
      assertThat(appliedVersions(env, schema)).isEqualTo(MIGRATIONS);
    } finally {
      env.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  @Test
  void appliesIntoACustomSchemaWithoutTouchingOthers(TestEnvironment env) {
    String schema = env.schema() + "_custom";
    try {
      HandoffMigrations.migrate(env.dataSource(), schema);

      assertThat(tablesIn(env, schema)).containsAll(TABLES);
      assertThat(env.queryLong(
              "select count(*) from information_schema.tables where table_schema = ? and table_name = 'outbox'",
              env.schema()))
          .isZero();
      env.execute(
          "insert into " + schema + ".outbox (message_id, topic, shard, type, payload) "
              + "values (gen_random_uuid(), 'orders', 0, 'order.placed', '\\x00')");
      assertThat(env.queryLong("select count(*) from " + schema + ".outbox where published_at is null"))
          .isEqualTo(1);
    } finally {
      env.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  @Test
  void coexistsWithTheApplicationsOwnFlywayHistoryInTheSameSchema(TestEnvironment env) {
    String schema = env.schema() + "_shared";
    try {
      Flyway app =
          Flyway.configure()
              .dataSource(env.dataSource())
              .schemas(schema)
              .defaultSchema(schema)
              .locations("classpath:dev/handoff/migrations/app")
              .load();
      assertThat(app.migrate().migrationsExecuted).isEqualTo(2);

      assertThat(HandoffMigrations.migrate(env.dataSource(), schema)).isEqualTo(MIGRATIONS);
      assertThat(app.migrate().migrationsExecuted).isZero();
      assertThat(HandoffMigrations.migrate(env.dataSource(), schema)).isZero();

      assertThat(tablesIn(env, schema))
          .containsAll(TABLES)
          .contains("app_order", "flyway_schema_history", HandoffMigrations.HISTORY_TABLE);
      assertThat(env.queryLong(
              "select count(*) from " + schema + ".flyway_schema_history where success and version is not null"))
          .isEqualTo(2);
    } finally {
      env.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  @Test
  void refusesASchemaNameThatIsNotAPlainIdentifier(TestEnvironment env) {
    assertThatThrownBy(() -> HandoffMigrations.migrate(env.dataSource(), "x; drop table outbox"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema")
        .hasMessageContaining("'x; drop table outbox'");
    assertThatThrownBy(() -> HandoffMigrations.migrate(env.dataSource(), "Handoff"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(env.queryLong(
            "select count(*) from information_schema.schemata where schema_name like 'x;%'"))
        .isZero();
  }

  private static List<String> tablesIn(TestEnvironment env, String schema) {
    List<String> names = new java.util.ArrayList<>();
    try (var c = env.dataSource().getConnection();
        var ps = c.prepareStatement(
            "select table_name from information_schema.tables where table_schema = ? order by table_name")) {
      ps.setString(1, schema);
      try (var rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
    return names;
  }

  private static long appliedVersions(TestEnvironment env, String schema) {
    return env.queryLong(
        "select count(*) from " + schema + "." + HandoffMigrations.HISTORY_TABLE
            + " where success and type = 'SQL'");
  }

  private static List<String> sorted(List<String> tables, String extra) {
    List<String> all = new java.util.ArrayList<>(tables);
    all.add(extra);
    all.sort(null);
    return all;
  }
}
