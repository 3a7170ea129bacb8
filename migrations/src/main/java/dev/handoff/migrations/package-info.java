/**
 * handoff's database schema as Flyway migrations, the least-privilege grants of its roles, and the validation of
 * the schema name that reaches SQL.
 *
 * <p>Start with {@link dev.handoff.migrations.HandoffMigrations#migrate(javax.sql.DataSource)}; then, for a role per
 * component, {@link dev.handoff.migrations.HandoffGrants}.
 */
package dev.handoff.migrations;
