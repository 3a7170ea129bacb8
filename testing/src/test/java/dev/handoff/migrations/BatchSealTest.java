package dev.handoff.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The seal of a consumer batch's transaction (migration V10), as PostgreSQL enforces it: the statements are the
 * consumer's own (the markers' statement sets {@code handoff.batch_seal}, the commit's round trip is
 * {@code SELECT batch_unseal(token); COMMIT}). Only a commit that cleared the seal with the right token commits
 * markers, and a clearing that finds the seal gone stops the {@code COMMIT} sent with it. The batch_seal protocol of
 * V4 keeps working beside it, for consumers of the previous version during a rolling upgrade.
 */
@HandoffTest
class BatchSealTest {

  private static final String INVALID_TERMINATION = "2D000";

  private final TestEnvironment env;
  private Connection tx;

  BatchSealTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void open() throws SQLException {
    env.execute("CREATE TABLE IF NOT EXISTS seal_effect (what text)");
    tx = env.dataSource().getConnection();
    tx.setAutoCommit(false);
  }

  @AfterEach
  void close() throws SQLException {
    tx.rollback();
    tx.close();
  }

  @Test
  void aSealedTransactionCommitsItsMarkersOnlyThroughTheUnsealingCommit() throws SQLException {
    UUID token = UUID.randomUUID();
    insertSealedMarkers(token, "unsealed by handoff", 3);
    effect("written by the handler, committed by handoff");
    unsealAndCommit(token);

    assertThat(markers("unsealed by handoff")).isEqualTo(3);
    assertThat(effects("written by the handler, committed by handoff")).isEqualTo(1);
    assertThat(env.queryLong("SELECT count(*) FROM batch_seal")).as("V4's table is not written").isZero();
  }

  @Test
  void aCommitSentAsSqlWhileSealedFailsAndCommitsNothing() throws SQLException {
    insertSealedMarkers(UUID.randomUUID(), "committed as SQL", 3);
    effect("written by the handler");

    assertThatThrownBy(() -> execute("COMMIT"))
        .isInstanceOf(SQLException.class)
        .hasMessageStartingWith("ERROR: handoff: a handler ended its consumer batch's transaction")
        .extracting(e -> ((SQLException) e).getSQLState()).isEqualTo(INVALID_TERMINATION);
    tx.rollback();

    assertThat(markers("committed as SQL")).isZero();
    assertThat(effects("written by the handler")).isZero();
  }

  @Test
  void theUnsealingCommitOfATransactionThatEndedEarlyCommitsNothingOfTheLaterOne() throws SQLException {
    UUID token = UUID.randomUUID();
    insertSealedMarkers(token, "rolled back as SQL", 2);
    execute("ROLLBACK"); // a handler's ROLLBACK as SQL: the markers and the seal are gone
    effect("written after the handler's ROLLBACK, in a transaction handoff did not open");

    assertThatThrownBy(() -> unsealAndCommit(token))
        .isInstanceOf(SQLException.class)
        .hasMessageStartingWith("ERROR: handoff: the seal of this consumer batch is gone")
        .extracting(e -> ((SQLException) e).getSQLState()).isEqualTo(INVALID_TERMINATION);
    tx.rollback();

    assertThat(markers("rolled back as SQL")).isZero();
    assertThat(effects("written after the handler's ROLLBACK, in a transaction handoff did not open")).isZero();
  }

  @Test
  void anotherBatchsTokenDoesNotClearTheSeal() throws SQLException {
    insertSealedMarkers(UUID.randomUUID(), "wrong token", 1);

    assertThatThrownBy(() -> unsealAndCommit(UUID.randomUUID()))
        .extracting(e -> ((SQLException) e).getSQLState()).isEqualTo(INVALID_TERMINATION);
    tx.rollback();

    assertThat(markers("wrong token")).isZero();
  }

  @Test
  void markersWrittenWithoutASealCommitAsBefore() throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("INSERT INTO inbox (consumer_group, message_id, stream_id,"
        + " outcome) VALUES ('unsealed', ?, '1-1', 'dead')")) {
      ps.setObject(1, UUID.randomUUID());
      ps.executeUpdate();
    }
    execute("UPDATE inbox SET outcome = 'processed' WHERE consumer_group = 'unsealed'");
    tx.commit();

    assertThat(markers("unsealed")).isEqualTo(1);
  }

  @Test
  void theSealOfTheEarlierVersionStillGuardsItsBatches() throws SQLException {
    UUID token = UUID.randomUUID();
    insertMarkerSealedAsInV4(token);
    assertThatThrownBy(() -> execute("COMMIT"))
        .extracting(e -> ((SQLException) e).getSQLState()).isEqualTo(INVALID_TERMINATION);
    tx.rollback();
    assertThat(markers("v4")).isZero();

    insertMarkerSealedAsInV4(token);
    try (PreparedStatement ps = tx.prepareStatement("DELETE FROM batch_seal WHERE token = ?;\nCOMMIT")) {
      ps.setObject(1, token);
      ps.execute();
    }
    tx.commit();
    assertThat(markers("v4")).isEqualTo(1);
  }

  /** A marker of group v4 and the seal as the consumers of V4 to V9 insert it, in one statement. */
  private void insertMarkerSealedAsInV4(UUID token) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("WITH seal AS (INSERT INTO batch_seal (token) VALUES (?))"
        + " INSERT INTO inbox (consumer_group, message_id, stream_id, outcome)"
        + " VALUES ('v4', gen_random_uuid(), '1-1', 'processed')")) {
      ps.setObject(1, token);
      ps.executeUpdate();
    }
  }

  private void insertSealedMarkers(UUID token, String group, int count) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("INSERT INTO inbox (consumer_group, message_id, stream_id,"
        + " outcome) SELECT ?, gen_random_uuid(), '1-' || g, 'processed' FROM generate_series(1, ?) AS g,"
        + " (SELECT set_config('handoff.batch_seal', ?, true)) AS seal")) {
      ps.setString(1, group);
      ps.setInt(2, count);
      ps.setString(3, token.toString());
      assertThat(ps.executeUpdate()).isEqualTo(count);
    }
  }

  private void unsealAndCommit(UUID token) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("SELECT batch_unseal(?);\nCOMMIT")) {
      ps.setObject(1, token);
      ps.execute();
    }
    tx.commit();
  }

  private void effect(String what) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("INSERT INTO seal_effect VALUES (?)")) {
      ps.setString(1, what);
      ps.executeUpdate();
    }
  }

  private long effects(String what) {
    return env.queryLong("SELECT count(*) FROM seal_effect WHERE what = ?", what);
  }

  private long markers(String group) {
    return env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = ?", group);
  }

  private void execute(String sql) throws SQLException {
    try (Statement s = tx.createStatement()) {
      s.execute(sql);
    }
  }
}
