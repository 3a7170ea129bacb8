package dev.handoff.migrations;

import dev.handoff.migrations.HandoffGrants.Role;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Checks, without DDL and as the connection's own user, that handoff's schema is migrated and that the user holds
 * every privilege a role's grant file gives: what a component needs before it starts. The privileges are read from
 * the shipped grant files, so the check and the grants cannot drift apart. Stateless and thread-safe.
 */
final class SchemaValidation {

  // GRANT <privileges> [(<columns>)] ON [SCHEMA] <object> TO <role>, as the grant files write it.
  private static final Pattern GRANT = Pattern.compile(
      "GRANT (?<privileges>[A-Z, ]+?)(?: \\((?<columns>[^)]*)\\))? ON (?<schemaGrant>SCHEMA )?(?<object>\\S+) TO .*");

  /** One privilege to hold: on the schema, a table, or a column of it. */
  record Needed(String privilege, String table, String column) {

    String describe(String schema) {
      if (table == null) {
        return privilege + " on schema " + schema;
      }
      return privilege + " on " + schema + "." + table + (column == null ? "" : " (column " + column + ")");
    }
  }

  /** A function of handoff's, by signature, the migration that creates it and the roles that call it. */
  record Function(String signature, String migration, Set<Role> callers) {

    String name() {
      return signature.substring(0, signature.indexOf('('));
    }
  }

  /**
   * handoff's functions, each granted to PUBLIC by its migration: there for every role (they say the schema is
   * migrated that far), callable for the roles that call them. The relay's cycle marks and assigns through V9's; a
   * consumer, and an operator retrying a dead letter, clear a batch's seal through V10's.
   */
  static final List<Function> FUNCTIONS = List.of(
      new Function("relay_mark_batches(text[], int[], bigint[], bigint[], boolean[], text, int[], bigint[], bigint[],"
          + " bigint[])", "V9", EnumSet.of(Role.RELAY)),
      new Function("relay_assign_batches(text[], int[], bigint[], int[], text, bigint)", "V9", EnumSet.of(Role.RELAY)),
      new Function("batch_unseal(uuid)", "V10", EnumSet.of(Role.CONSUMER, Role.OPERATOR)));

  private SchemaValidation() {}

  /** The first thing missing for {@code role} on {@code schema}, as one line, or empty when nothing is. */
  static Optional<String> firstProblem(DataSource dataSource, String schema, Role role) throws SQLException {
    List<Needed> needed = needed(role, schema);
    try (Connection c = dataSource.getConnection()) {
      String user = currentUser(c);
      // The schema first: without USAGE on it, no table of it can even be looked up.
      for (Needed n : needed) {
        if (n.table() == null) {
          Optional<String> problem = check(c, schema, user, role, n);
          if (problem.isPresent()) {
            return problem;
          }
        }
      }
      for (String table : HandoffMigrations.TABLES) {
        if (!exists(c, schema + "." + table)) {
          return Optional.of("schema '" + schema + "' has no table '" + table + "': apply handoff's migrations"
              + " first, as the owner of its tables (handoff.jar migrate, or HandoffMigrations.migrate)");
        }
      }
      for (Function function : FUNCTIONS) {
        Optional<String> problem = checkFunction(c, schema, user, role, function);
        if (problem.isPresent()) {
          return problem;
        }
      }
      for (Needed n : needed) {
        Optional<String> problem = n.table() == null ? Optional.empty() : check(c, schema, user, role, n);
        if (problem.isPresent()) {
          return problem;
        }
      }
    }
    return Optional.empty();
  }

  /** Whether {@code function} exists in {@code schema}, and, for a role that calls it, whether the user may. */
  private static Optional<String> checkFunction(Connection c, String schema, String user, Role role,
      Function function) throws SQLException {
    String name = function.name();
    try (PreparedStatement ps = c.prepareStatement("SELECT f IS NOT NULL, f IS NOT NULL"
        + " AND has_function_privilege(current_user, f, 'EXECUTE') FROM (SELECT to_regprocedure(?) AS f) p")) {
      ps.setString(1, "\"" + schema + "\"." + function.signature());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return Optional.of("schema '" + schema + "' has no function '" + name + "' (migration "
              + function.migration() + "): apply handoff's migrations first, as the owner of its tables"
              + " (handoff.jar migrate, or HandoffMigrations.migrate)");
        }
        if (function.callers().contains(role) && !rs.getBoolean(2)) {
          return Optional.of("role '" + user + "' lacks EXECUTE on function " + schema + "." + name + ", which the "
              + role.name().toLowerCase(Locale.ROOT) + " role needs: GRANT EXECUTE ON FUNCTION " + schema + "." + name
              + " TO " + user + ", as its owner (migration " + function.migration() + " grants it to PUBLIC)");
        }
      }
    }
    return Optional.empty();
  }

  private static Optional<String> check(Connection c, String schema, String user, Role role, Needed n)
      throws SQLException {
    String sql;
    if (n.table() == null) {
      sql = "SELECT has_schema_privilege(current_user, ?, ?)";
    } else if (n.column() == null) {
      sql = "SELECT has_table_privilege(current_user, ?, ?)";
    } else {
      sql = "SELECT has_column_privilege(current_user, ?, ?, ?)";
    }
    boolean held;
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, n.table() == null ? schema : schema + "." + n.table());
      if (n.column() == null) {
        ps.setString(2, n.privilege());
      } else {
        ps.setString(2, n.column());
        ps.setString(3, n.privilege());
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        held = rs.getBoolean(1);
      }
    } catch (SQLException e) {
      if ("3F000".equals(e.getSQLState())) {
        return Optional.of("schema '" + schema + "' does not exist: apply handoff's migrations first, as the owner"
            + " of its tables (handoff.jar migrate, or HandoffMigrations.migrate)");
      }
      if ("42703".equals(e.getSQLState())) {
        return Optional.of("table " + schema + "." + n.table() + " has no column '" + n.column() + "': apply"
            + " handoff's migrations first, as the owner of its tables (handoff.jar migrate)");
      }
      throw e;
    }
    if (held) {
      return Optional.empty();
    }
    String roleName = role.name().toLowerCase(Locale.ROOT);
    return Optional.of("role '" + user + "' lacks " + n.describe(schema) + ", which the " + roleName + " role needs:"
        + " apply its grants as the owner of handoff's tables (handoff.jar grants --role " + roleName + " --to "
        + user + " --apply, or HandoffGrants.apply)");
  }

  /** Every privilege the grant file of {@code role} gives, one per table or column. */
  static List<Needed> needed(Role role, String schema) {
    List<Needed> out = new ArrayList<>();
    String prefix = "\"" + schema + "\".";
    for (String statement : HandoffGrants.statements(role, schema, "handoff_validation")) {
      Matcher m = GRANT.matcher(statement);
      if (!m.matches()) {
        throw new IllegalStateException(role.fileName() + " holds a statement the check cannot read: " + statement);
      }
      boolean onSchema = m.group("schemaGrant") != null;
      String object = m.group("object");
      String table = onSchema ? null : object.startsWith(prefix) ? object.substring(prefix.length()) : object;
      for (String privilege : m.group("privileges").split(",")) {
        if (m.group("columns") == null) {
          out.add(new Needed(privilege.trim(), table, null));
        } else {
          for (String column : m.group("columns").split(",")) {
            out.add(new Needed(privilege.trim(), table, column.trim()));
          }
        }
      }
    }
    return out;
  }

  private static boolean exists(Connection c, String qualified) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, qualified);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  private static String currentUser(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT current_user");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }
}
