package dev.handoff.ledger;

import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerThroughPgBouncerTest} in transaction pooling, no direct notification connection: the relay polls. */
class LedgerThroughTransactionPoolingTest extends LedgerThroughPgBouncerTest {
  LedgerThroughTransactionPoolingTest(TestEnvironment env) {
    super(env, PoolMode.TRANSACTION, false);
  }
}
