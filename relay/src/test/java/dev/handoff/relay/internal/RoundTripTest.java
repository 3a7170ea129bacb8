package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;

/**
 * What the relay's cycle relies on when it sends its marks and assignments as one execute ({@link RoundTrip}), on
 * the real server with the real driver: the statements are one transaction that commits as the execute returns, a
 * failing statement takes those before it back, and each statement sees what the earlier ones wrote.
 */
@HandoffTest
class RoundTripTest {

  private final TestEnvironment env;

  RoundTripTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void createTable() {
    env.execute("DROP TABLE IF EXISTS " + table(), "CREATE TABLE " + table() + " (id int PRIMARY KEY)");
  }

  @Test
  void statementsOfOneExecuteAreOneTransactionThatCommitsAsItReturns() throws SQLException {
    try (Connection c = env.dataSource().getConnection()) {
      assertThat(c.getAutoCommit()).isTrue();
      RoundTrip trip = new RoundTrip();
      RoundTrip.Result<Long> first = trip.add(insert(1));
      RoundTrip.Result<Long> second = trip.add(insert(2));
      RoundTrip.Result<Long> seen = trip.add(new RoundTrip.Part<>("SELECT count(*), 0::bigint FROM " + table(),
          (conn, ps, i) -> i, rs -> {
            rs.next();
            return rs.getLong(1);
          }));
      trip.run(c);

      assertThat(second.get()).as("the same transaction id in both statements").isEqualTo(first.get());
      assertThat(seen.get()).as("a statement sees what the earlier ones wrote").isEqualTo(2);
    }
    assertThat(env.queryLong("SELECT count(*) FROM " + table())).as("committed, seen from another connection")
        .isEqualTo(2);
  }

  @Test
  void aFailingStatementTakesBackTheOnesBeforeIt() throws SQLException {
    try (Connection c = env.dataSource().getConnection()) {
      RoundTrip trip = new RoundTrip();
      trip.add(insert(1));
      trip.add(insert(2));
      trip.add(insert(1));
      Throwable e = catchThrowable(() -> trip.run(c));

      assertThat(e).isInstanceOf(PSQLException.class).hasMessageContaining("duplicate key");
      assertThat(c.getAutoCommit()).isTrue();
      assertThat(RoundTrip.one(c, insert(3))).as("the connection goes on in auto-commit").isPositive();
    }
    assertThat(env.queryList("SELECT id FROM " + table() + " ORDER BY id", Integer.class)).containsExactly(3);
  }

  @Test
  void inAnOpenTransactionTheStatementsAndTheCommitAreOneExecuteThatEndsIt() throws SQLException {
    try (Connection c = env.dataSource().getConnection()) {
      c.setAutoCommit(false);
      long before = RoundTrip.one(c, insert(1));
      RoundTrip trip = new RoundTrip();
      RoundTrip.Result<Long> second = trip.add(insert(2));
      trip.runAndCommit(c);

      assertThat(second.get()).as("the transaction the earlier statement opened").isEqualTo(before);
      assertThat(env.queryLong("SELECT count(*) FROM " + table())).as("committed before commit() is called")
          .isEqualTo(2);
      c.commit(); // finds no transaction
      c.setAutoCommit(true);
    }
  }

  @Test
  void aFailingStatementBeforeTheCommitLeavesTheWholeTransactionUncommitted() throws SQLException {
    try (Connection c = env.dataSource().getConnection()) {
      c.setAutoCommit(false);
      RoundTrip.one(c, insert(1));
      RoundTrip trip = new RoundTrip();
      trip.add(insert(2));
      trip.add(insert(1));
      Throwable e = catchThrowable(() -> trip.runAndCommit(c));

      assertThat(e).isInstanceOf(PSQLException.class).hasMessageContaining("duplicate key");
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(env.queryLong("SELECT count(*) FROM " + table())).as("neither the earlier insert nor these")
        .isZero();
  }

  private RoundTrip.Part<Long> insert(int id) {
    return new RoundTrip.Part<>("INSERT INTO " + table() + " (id) VALUES (?) RETURNING txid_current()",
        (c, ps, i) -> {
          ps.setInt(i, id);
          return i + 1;
        }, rs -> {
          rs.next();
          return rs.getLong(1);
        });
  }

  private String table() {
    return env.schema() + ".round_trip";
  }
}
