/**
 * What the ledger demo and the benchmarks share to run against servers: embedded PostgreSQL and Redis
 * ({@link dev.handoff.testing.tools.EmbeddedServers}), the servers as one value
 * ({@link dev.handoff.testing.tools.LedgerServers}), small SQL helpers and a timed log. Not published.
 */
package dev.handoff.testing.tools;
