package dev.handoff.testing.tools;

import dev.handoff.core.RedisConnectionSpec;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * The PostgreSQL and Redis the ledger demo and the benchmarks (bench, the soak) run against.
 *
 * @param redis the client for the sample's own Redis commands
 * @param redisSpec the server (or cluster), login and TLS that handoff's relay and consumers open their own pools to
 */
public record LedgerServers(DataSource dataSource, UnifiedJedis redis, RedisConnectionSpec redisSpec) {}
