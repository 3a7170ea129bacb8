package dev.handoff.migrations;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.Locale;
import javax.sql.DataSource;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.Test;

/**
 * A component that must not run DDL checks its schema and its role's privileges instead of migrating: each failure
 * is one line naming what is missing and how to fix it.
 */
@HandoffTest
class SchemaValidationTest {

  private final TestEnvironment env;

  SchemaValidationTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void eachRoleValidatesWithItsGrantsAndEachGrantRevokedAloneIsTheOneNamed() throws Exception {
    for (Role role : Role.values()) {
      try (DatabaseRole r = env.newRole().grant(role)) {
        DataSource pool = r.newDataSource(1);
        HandoffMigrations.validate(pool, env.schema(), role);
        String roleName = role.name().toLowerCase(Locale.ROOT);
        for (SchemaValidation.Needed n : SchemaValidation.needed(role, env.schema())) {
          String on = n.table() == null ? " ON SCHEMA " + env.schema()
              : (n.column() == null ? "" : " (" + n.column() + ")") + " ON " + env.schema() + "." + n.table();
          r.execute("REVOKE " + n.privilege() + on + " FROM ROLE");
          assertThatThrownBy(() -> HandoffMigrations.validate(pool, env.schema(), role)).as(role + " " + on)
              .hasMessage("role '" + r.name() + "' lacks " + n.describe(env.schema()) + ", which the " + roleName
                  + " role needs: apply its grants as the owner of handoff's tables (handoff.jar grants --role "
                  + roleName + " --to " + r.name() + " --apply, or HandoffGrants.apply)");
          r.execute("GRANT " + n.privilege() + on + " TO ROLE");
          HandoffMigrations.validate(pool, env.schema(), role);
        }
      }
    }
  }

  @Test
  void aMissingTableGrantIsNamedWithTheRoleAndHowToGrantIt() {
    try (DatabaseRole r = env.newRole().grant(Role.CONSUMER)
        .execute("REVOKE DELETE ON " + env.schema() + ".inbox FROM ROLE")) {
      assertThatThrownBy(() -> HandoffMigrations.validate(r.newDataSource(1), env.schema(), Role.CONSUMER))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("role '" + r.name() + "' lacks DELETE on " + env.schema() + ".inbox, which the consumer"
              + " role needs: apply its grants as the owner of handoff's tables (handoff.jar grants --role consumer"
              + " --to " + r.name() + " --apply, or HandoffGrants.apply)");
    }
  }

  @Test
  void theRelaysFunctionsMustBeThereAndCallableByTheRelayRole() {
    try (DatabaseRole r = env.newRole().grant(Role.RELAY)
        .execute("REVOKE EXECUTE ON FUNCTION " + env.schema() + ".relay_assign_batches FROM PUBLIC")) {
      assertThatThrownBy(() -> HandoffMigrations.validate(r.newDataSource(1), env.schema(), Role.RELAY))
          .hasMessage("role '" + r.name() + "' lacks EXECUTE on function " + env.schema() + ".relay_assign_batches,"
              + " which the relay role needs: GRANT EXECUTE ON FUNCTION " + env.schema() + ".relay_assign_batches TO "
              + r.name() + ", as its owner (migration V9 grants it to PUBLIC)");
      r.execute("GRANT EXECUTE ON FUNCTION " + env.schema() + ".relay_assign_batches TO ROLE");
      assertThatCode(() -> HandoffMigrations.validate(r.newDataSource(1), env.schema(), Role.RELAY))
          .doesNotThrowAnyException();
    } finally {
      env.execute("GRANT EXECUTE ON FUNCTION " + env.schema() + ".relay_assign_batches TO PUBLIC");
    }
  }

  @Test
  void theSealsFunctionMustBeThereAndCallableByTheRolesThatRunHandlers() {
    try (DatabaseRole r = env.newRole().grant(Role.CONSUMER).grant(Role.OPERATOR).grant(Role.RELAY)
        .execute("REVOKE EXECUTE ON FUNCTION " + env.schema() + ".batch_unseal FROM PUBLIC")) {
      for (Role role : new Role[] {Role.CONSUMER, Role.OPERATOR}) {
        assertThatThrownBy(() -> HandoffMigrations.validate(r.newDataSource(1), env.schema(), role))
            .hasMessage("role '" + r.name() + "' lacks EXECUTE on function " + env.schema() + ".batch_unseal, which"
                + " the " + role.name().toLowerCase(Locale.ROOT) + " role needs: GRANT EXECUTE ON FUNCTION "
                + env.schema() + ".batch_unseal TO " + r.name() + ", as its owner (migration V10 grants it to"
                + " PUBLIC)");
      }
      assertThatCode(() -> HandoffMigrations.validate(r.newDataSource(1), env.schema(), Role.RELAY))
          .as("the relay never runs a handler").doesNotThrowAnyException();
    } finally {
      env.execute("GRANT EXECUTE ON FUNCTION " + env.schema() + ".batch_unseal TO PUBLIC");
    }
  }

  @Test
  void aSchemaMigratedBeforeTheSealsFunctionSaysToMigrate() {
    String old = env.schema() + "_v9";
    try {
      HandoffMigrations.migrate(env.dataSource(), old);
      env.execute("DROP FUNCTION " + old + ".batch_unseal");
      assertThatThrownBy(() -> HandoffMigrations.validate(env.dataSource(), old, Role.RELAY))
          .hasMessage("schema '" + old + "' has no function 'batch_unseal' (migration V10): apply handoff's"
              + " migrations first, as the owner of its tables (handoff.jar migrate, or HandoffMigrations.migrate)");
    } finally {
      env.execute("DROP SCHEMA IF EXISTS " + old + " CASCADE");
    }
  }

  @Test
  void aSchemaMigratedBeforeTheRelaysFunctionsSaysToMigrate() {
    String old = env.schema() + "_v8";
    try {
      HandoffMigrations.migrate(env.dataSource(), old);
      env.execute("DROP FUNCTION " + old + ".relay_mark_batches");
      assertThatThrownBy(() -> HandoffMigrations.validate(env.dataSource(), old, Role.CONSUMER))
          .hasMessage("schema '" + old + "' has no function 'relay_mark_batches' (migration V9): apply handoff's"
              + " migrations first, as the owner of its tables (handoff.jar migrate, or HandoffMigrations.migrate)");
    } finally {
      env.execute("DROP SCHEMA IF EXISTS " + old + " CASCADE");
    }
  }

  @Test
  void aMissingColumnGrantIsNamedWithItsColumn() {
    try (DatabaseRole r = env.newRole().grant(Role.APPLICATION)
        .execute("REVOKE INSERT (payload) ON " + env.schema() + ".outbox FROM ROLE")) {
      assertThatThrownBy(() -> HandoffMigrations.validate(r.newDataSource(1), env.schema(), Role.APPLICATION))
          .hasMessageStartingWith("role '" + r.name() + "' lacks INSERT on " + env.schema()
              + ".outbox (column payload), which the application role needs");
    }
  }

  @Test
  void aSchemaNotMigratedYetSaysToMigrateAsTheOwner() {
    String empty = env.schema() + "_empty";
    env.execute("CREATE SCHEMA " + empty);
    try {
      DataSource owner = env.dataSource();
      assertThatThrownBy(() -> HandoffMigrations.validate(owner, empty, Role.RELAY))
          .hasMessage("schema '" + empty + "' has no table 'outbox': apply handoff's migrations first, as the owner"
              + " of its tables (handoff.jar migrate, or HandoffMigrations.migrate)");
      assertThatThrownBy(() -> HandoffMigrations.validate(owner, env.schema() + "_none", Role.RELAY))
          .hasMessage("schema '" + env.schema() + "_none' does not exist: apply handoff's migrations first, as the"
              + " owner of its tables (handoff.jar migrate, or HandoffMigrations.migrate)");
    } finally {
      env.execute("DROP SCHEMA " + empty);
    }
  }

  @Test
  void migratingAsALeastPrivilegeRoleFailsWithOneLineThatPointsToValidate() {
    try (DatabaseRole r = env.newRole().grant(Role.CONSUMER)) {
      assertThatThrownBy(() -> HandoffMigrations.migrate(r.newDataSource(1), env.schema()))
          .isInstanceOf(FlywayException.class)
          .hasMessageStartingWith("migrating handoff's schema '" + env.schema() + "' was refused a privilege (")
          .hasMessageEndingWith("): migrations run DDL and need the owner of handoff's tables; a component that runs"
              + " under a least-privilege role checks its schema with HandoffMigrations.validate instead")
          .satisfies(e -> org.assertj.core.api.Assertions.assertThat(e.getMessage()).doesNotContain("\n"));
    }
  }
}
