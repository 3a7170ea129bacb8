/**
 * handoff's database schema as Flyway migrations, and the validation of the schema name that reaches SQL.
 *
 * <p>Start with {@link dev.handoff.migrations.HandoffMigrations#migrate(javax.sql.DataSource)}.
 */
package dev.handoff.migrations;
