package dev.handoff.testing.tools;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * One statement at a time on a connection of its own, for the counts and the set-up of the demo and the benchmark;
 * a failure is an {@link IllegalStateException} that says whose statement failed.
 *
 * @param purpose who runs the statements, for the message of a failure ("demo", "benchmark")
 */
public record Sql(DataSource dataSource, String purpose) {

  /** The first column of the first row of {@code sql}, with {@code params} bound in order. */
  public long queryLong(String sql, Object... params) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException(purpose + " query returned no row: " + sql);
        }
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(purpose + " query failed: " + e.getMessage(), e);
    }
  }

  /** Runs {@code sql}, which returns nothing (DDL, VACUUM, a bulk insert), in auto-commit. */
  public void exec(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(purpose + " statement failed: " + e.getMessage(), e);
    }
  }
}
