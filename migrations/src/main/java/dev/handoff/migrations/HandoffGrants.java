package dev.handoff.migrations;

import dev.handoff.core.internal.SchemaNames;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The least privileges each of handoff's components needs on its tables, as SQL for a role of yours.
 *
 * <p>The statements ship as readable SQL files on the classpath under {@value #LOCATION} ({@code application.sql},
 * {@code relay.sql}, {@code consumer.sql}, {@code operator.sql}), with psql variables for the schema and the role:
 * {@code psql -v schema=handoff -v role=app -f application.sql} runs one as it is. {@link #sql} returns a file
 * with both filled in, {@link #apply} runs it. docs/operations.md ("Database roles") explains every grant.
 *
 * <p>Only GRANT statements: the role must exist, nothing is revoked, and applying twice changes nothing. The
 * handler's own tables (for the consumer role, and the operator's dead-letter retries) are not handoff's to
 * grant. This class is thread-safe and stateless.
 */
public final class HandoffGrants {

  /** The classpath folder of the grant files. */
  public static final String LOCATION = "dev/handoff/migrations/grants";

  /**
   * A role name: a letter or underscore, then letters, digits and underscores, at most 63 characters (PostgreSQL's
   * identifier limit). It is quoted in the SQL, so it is used exactly as given: {@code App} and {@code app} are
   * two roles, as in {@code CREATE ROLE "App"}.
   */
  public static final Pattern ROLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private static final String SCHEMA_VARIABLE = ":\"schema\"";
  private static final String ROLE_VARIABLE = ":\"role\"";

  /** What a role does with handoff's tables; each has its own file under {@value #LOCATION}. */
  public enum Role {
    /** Appends to the outbox in the application's transactions, and nothing else. */
    APPLICATION,
    /** Publishes outbox rows, holds the leases, purges published rows past the outbox retention. */
    RELAY,
    /** Inbox markers, dead letters, the inbox purge, and outbox reads for recovery and replay. */
    CONSUMER,
    /** Status, dead-letter list and retry, inbox purge. */
    OPERATOR;

    /** The role's file name, such as {@code relay.sql}. */
    public String fileName() {
      return name().toLowerCase(Locale.ROOT) + ".sql";
    }

    /**
     * The role named as on a command line, case-insensitively: {@code application}, {@code relay},
     * {@code consumer} or {@code operator}.
     *
     * @throws IllegalArgumentException naming the accepted values otherwise
     */
    public static Role parse(String name) {
      for (Role r : values()) {
        if (r.name().equalsIgnoreCase(name == null ? "" : name.trim())) {
          return r;
        }
      }
      throw new IllegalArgumentException("role must be one of application, relay, consumer, operator, was "
          + (name == null ? "null" : "'" + name + "'"));
    }
  }

  private HandoffGrants() {}

  /**
   * The shipped file of {@code role} with the schema and the role name filled in, comments included.
   *
   * @param schema the schema of handoff's tables, matching {@link SchemaNames#PATTERN}
   * @param roleName the role to grant to, matching {@link #ROLE_NAME}
   * @throws IllegalArgumentException if the schema or the role name is not a valid identifier
   */
  public static String sql(Role role, String schema, String roleName) {
    Objects.requireNonNull(role, "role");
    SchemaNames.requireValid(schema);
    requireRoleName(roleName);
    String text = template(role)
        .replace(SCHEMA_VARIABLE, quote(schema))
        .replace(ROLE_VARIABLE, quote(roleName));
    if (text.contains(":\"")) {
      throw new IllegalStateException(role.fileName() + " holds a variable other than :\"schema\" and :\"role\"");
    }
    return text;
  }

  /** The statements of {@link #sql}, without comments, each without its final semicolon. */
  public static List<String> statements(Role role, String schema, String roleName) {
    StringBuilder code = new StringBuilder();
    for (String line : sql(role, schema, roleName).split("\n", -1)) {
      if (!line.trim().startsWith("--")) {
        code.append(line).append('\n');
      }
    }
    List<String> out = new ArrayList<>();
    for (String statement : code.toString().split(";")) {
      String s = statement.trim().replaceAll("\\s+", " ");
      if (!s.isEmpty()) {
        out.add(s);
      }
    }
    return out;
  }

  /**
   * Runs the grants of {@code role} to {@code roleName} in one transaction: all of them or, if one fails (the role
   * or a table does not exist, the connection's user may not grant), none.
   *
   * @param dataSource connections as a user that may grant on handoff's tables (their owner, usually the one that
   *     ran the migrations)
   * @return the number of statements run
   * @throws IllegalArgumentException if the schema or the role name is not a valid identifier
   * @throws SQLException if a statement fails; the message names the role, the schema and the statement
   */
  public static int apply(DataSource dataSource, Role role, String schema, String roleName) throws SQLException {
    Objects.requireNonNull(dataSource, "dataSource");
    List<String> statements = statements(role, schema, roleName);
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      String current = null;
      try (Statement s = c.createStatement()) {
        for (String statement : statements) {
          current = statement;
          s.execute(statement);
        }
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw new SQLException("granting the " + role.name().toLowerCase(Locale.ROOT) + " privileges on schema '"
            + schema + "' to role '" + roleName + "' failed at: " + current + ": " + e.getMessage(), e.getSQLState(),
            e);
      } finally {
        c.setAutoCommit(autoCommit);
      }
    }
    return statements.size();
  }

  /**
   * Returns {@code roleName} if it matches {@link #ROLE_NAME} and is not reserved ({@code public}, {@code pg_*}).
   *
   * @throws IllegalArgumentException naming the offending value otherwise
   */
  public static String requireRoleName(String roleName) {
    if (roleName == null || !ROLE_NAME.matcher(roleName).matches()) {
      throw new IllegalArgumentException("role name must match " + ROLE_NAME.pattern()
          + " (letters, digits, underscores), was " + (roleName == null ? "null" : "'" + roleName + "'"));
    }
    String lower = roleName.toLowerCase(Locale.ROOT);
    if (lower.equals("public") || lower.startsWith("pg_")) {
      throw new IllegalArgumentException("role name '" + roleName + "' is reserved by PostgreSQL (public, pg_*)");
    }
    return roleName;
  }

  private static String quote(String identifier) {
    // Both names were validated (no quote can occur), so the quoting only keeps their case and keywords literal.
    return '"' + identifier + '"';
  }

  private static String template(Role role) {
    String path = LOCATION + "/" + role.fileName();
    try (InputStream in = HandoffGrants.class.getClassLoader().getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("grant file " + path + " is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("could not read grant file " + path, e);
    }
  }
}
