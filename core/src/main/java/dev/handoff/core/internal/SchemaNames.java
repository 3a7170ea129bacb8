package dev.handoff.core.internal;

import java.util.regex.Pattern;

/**
 * Validation of the schema name that handoff interpolates into SQL.
 *
 * <p>Identifiers cannot be bound as JDBC parameters, so every schema name that reaches SQL is first checked
 * against a strict pattern: this is what keeps configuration from injecting SQL.
 */
public final class SchemaNames {

  /** The schema handoff's tables live in unless a builder says otherwise. */
  public static final String DEFAULT_SCHEMA = "handoff";

  /** A lower-case SQL identifier of at most 48 characters: letters, digits and underscores. */
  public static final Pattern PATTERN = Pattern.compile("[a-z_][a-z0-9_]{0,47}");

  private SchemaNames() {}

  /**
   * Returns {@code schema} if it matches {@link #PATTERN}.
   *
   * @throws IllegalArgumentException naming the offending value otherwise
   */
  public static String requireValid(String schema) {
    if (schema == null || !PATTERN.matcher(schema).matches()) {
      throw new IllegalArgumentException(
          "schema must match " + PATTERN.pattern() + " (lower-case letters, digits, underscores), was "
              + (schema == null ? "null" : "'" + schema + "'"));
    }
    return schema;
  }
}
