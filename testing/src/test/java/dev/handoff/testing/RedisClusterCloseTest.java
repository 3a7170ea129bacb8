package dev.handoff.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;

/** close() leaves nothing behind: every process is gone (by PID) and so is the directory. */
class RedisClusterCloseTest {

  @Test
  void closeKillsEveryNodeByPidAndDeletesTheDirectory() {
    RedisCluster cluster = RedisCluster.start();
    List<HostAndPort> nodes = List.copyOf(cluster.seeds());
    List<Long> pids = nodes.stream().map(cluster::pid).toList();
    Path dir = cluster.directory();
    assertThat(pids).hasSize(6).allSatisfy(pid -> assertThat(ProcessHandle.of(pid)).isPresent());
    assertThat(dir).isDirectory();

    cluster.close();

    assertThat(pids).allSatisfy(pid -> assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
        .as("pid %d alive", pid).isFalse());
    assertThat(Files.exists(dir)).isFalse();
    cluster.close(); // idempotent
  }
}
