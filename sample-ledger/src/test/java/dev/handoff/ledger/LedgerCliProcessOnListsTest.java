package dev.handoff.ledger;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerCliProcessTest} on Redis lists ({@code --transport list}, capacity 200), with 2,000 payments. */
class LedgerCliProcessOnListsTest extends LedgerCliProcessTest {
  LedgerCliProcessOnListsTest(TestEnvironment env) {
    super(env, Transport.LIST, 2_000);
  }
}
