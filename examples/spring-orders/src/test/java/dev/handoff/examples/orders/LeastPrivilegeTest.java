package dev.handoff.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.spring.HandoffStartupException;
import dev.handoff.testing.TestServers;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

/**
 * The application under a database user that holds only handoff's least-privilege grants (application, relay and
 * consumer roles) and may not run DDL: start-up validates instead of migrating, and the application works. Without
 * one of those grants it does not start, and says which grant in one line.
 */
class LeastPrivilegeTest {

  private static final String SCHEMA = "least_privilege_test";
  private static final String HANDOFF = SCHEMA + "_handoff";
  private static final String ROLE =
      "orders_app_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000000, 0x7FFFFFFF));
  private static final String PASSWORD = UUID.randomUUID().toString();
  private static HikariDataSource owner;

  @BeforeAll
  static void schemaAndRole() throws Exception {
    Map<String, String> props = TestInfrastructure.properties(SCHEMA);
    owner = TestServers.newDataSource(SCHEMA, 2);
    new ResourceDatabasePopulator(new ClassPathResource("schema.sql"), new ClassPathResource("test-schema.sql"))
        .execute(owner);
    HandoffMigrations.migrate(owner, HANDOFF);
    JdbcTemplate jdbc = new JdbcTemplate(owner);
    jdbc.execute("CREATE ROLE " + ROLE + " LOGIN PASSWORD '" + PASSWORD + "'");
    jdbc.execute("GRANT USAGE ON SCHEMA " + SCHEMA + " TO " + ROLE);
    jdbc.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + SCHEMA + " TO " + ROLE);
    jdbc.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + SCHEMA + " TO " + ROLE);
    for (HandoffGrants.Role role : List.of(HandoffGrants.Role.APPLICATION, HandoffGrants.Role.RELAY,
        HandoffGrants.Role.CONSUMER)) {
      HandoffGrants.apply(owner, role, HANDOFF, ROLE);
    }
    assertThat(props).containsKey("spring.datasource.url");
  }

  @AfterAll
  static void dropRole() {
    JdbcTemplate jdbc = new JdbcTemplate(owner);
    jdbc.execute("DROP OWNED BY " + ROLE);
    jdbc.execute("DROP ROLE " + ROLE);
    owner.close();
  }

  @Test
  void theLeastPrivilegeGrantsValidateAndTheApplicationWorksAndAMissingGrantIsNamedInOneLine() {
    try (ConfigurableApplicationContext app = start()) {
      app.getBean(OrderService.class).placeOrder("lp-1", 700);
      JdbcTemplate jdbc = new JdbcTemplate(owner);
      ConsumerTestKit.await("lp-1 invoiced and shipped", Duration.ofSeconds(60), () ->
          jdbc.queryForObject("SELECT count(*) FROM invoice WHERE order_id = 'lp-1'", Long.class) == 1
              && jdbc.queryForObject("SELECT count(*) FROM shipment WHERE order_id = 'lp-1'", Long.class) == 1);
    }

    new JdbcTemplate(owner).execute("REVOKE DELETE ON " + HANDOFF + ".inbox FROM " + ROLE);
    Throwable failure = catchThrowable(LeastPrivilegeTest::start);
    while (failure != null && !(failure instanceof HandoffStartupException)) {
      failure = failure.getCause();
    }
    assertThat(failure)
        .isInstanceOf(HandoffStartupException.class)
        .hasMessage("handoff schema '" + HANDOFF + "': role '" + ROLE + "' lacks DELETE on " + HANDOFF
            + ".inbox, which the consumer role needs: apply its grants as the owner of handoff's tables"
            + " (handoff.jar grants --role consumer --to " + ROLE + " --apply, or HandoffGrants.apply)"
            + " (or set handoff.migrate=true where the application may run DDL)");
  }

  private static ConfigurableApplicationContext start() {
    List<String> args = new ArrayList<>();
    TestInfrastructure.properties(SCHEMA).forEach((k, v) -> {
      if (!k.startsWith("spring.datasource.")) {
        args.add("--" + k + "=" + v);
      }
    });
    String url = TestServers.postgres().jdbcUrl().replaceAll("(?i)([?&])(user|password)=[^&]*", "$1")
        .replaceAll("[?&]+$", "").replaceAll("\\?&+", "?").replaceAll("&&+", "&");
    args.addAll(List.of("--spring.datasource.url=" + url + (url.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA,
        "--spring.datasource.username=" + ROLE, "--spring.datasource.password=" + PASSWORD,
        "--spring.sql.init.mode=never", "--handoff.migrate=false", "--spring.main.web-application-type=none"));
    return new SpringApplicationBuilder(OrdersApplication.class).run(args.toArray(String[]::new));
  }
}
