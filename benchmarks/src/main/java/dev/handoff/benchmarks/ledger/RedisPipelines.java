package dev.handoff.benchmarks.ledger;

import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/** The baselines' pipelines: one connection, replies read at the end. */
final class RedisPipelines {

  private RedisPipelines() {}

  static Pipeline open(UnifiedJedis redis) {
    if (redis instanceof RedisClient c) {
      return c.pipelined();
    }
    throw new IllegalStateException("pipelines need a RedisClient, was " + redis.getClass().getSimpleName());
  }
}
