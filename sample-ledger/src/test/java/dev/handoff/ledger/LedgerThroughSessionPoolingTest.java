package dev.handoff.ledger;

import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerThroughPgBouncerTest} in session pooling: LISTEN works through the pool. */
class LedgerThroughSessionPoolingTest extends LedgerThroughPgBouncerTest {
  LedgerThroughSessionPoolingTest(TestEnvironment env) {
    super(env, PoolMode.SESSION, false);
  }
}
