package dev.handoff.ledger;

import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerThroughPgBouncerTest} in transaction pooling with a direct connection for LISTEN. */
class LedgerThroughTransactionPoolingWithDirectNotificationsTest extends LedgerThroughPgBouncerTest {
  LedgerThroughTransactionPoolingWithDirectNotificationsTest(TestEnvironment env) {
    super(env, PoolMode.TRANSACTION, true);
  }
}
