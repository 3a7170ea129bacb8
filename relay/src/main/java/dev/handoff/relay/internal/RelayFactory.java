package dev.handoff.relay.internal;

import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.internal.micrometer.RelayMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/** Puts a relay together from its builder's settings; Micrometer is touched only when a registry is given. */
public final class RelayFactory {

  private RelayFactory() {}

  /**
   * The relay (not started), owning {@code client} from here: closed with the relay, or at once should building
   * fail.
   *
   * @param registry where its meters go, or null for none
   */
  public static Relay create(DataSource dataSource, DataSource notificationDataSource, UnifiedJedis client,
      RelayConfig config, RelayCollaborators collaborators, MeterRegistry registry, Duration metricsRefresh) {
    try {
      if (registry == null) {
        return new DefaultRelay(dataSource, notificationDataSource, client, config, collaborators);
      }
      return RelayMetrics.build(registry, metricsRefresh, config, collaborators, dataSource, client,
          c -> new DefaultRelay(dataSource, notificationDataSource, client, config, c));
    } catch (RuntimeException | Error e) {
      client.close();
      throw e;
    }
  }

  /** A relay's name in leases when none is given: {@code relay-<host>-<pid>-<random>}, unique per process. */
  public static String defaultOwner() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      host = "unknown";
    }
    long pid = ProcessHandle.current().pid();
    String suffix = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x100000, 0xFFFFFF));
    String name = "relay-" + host + "-" + pid + "-" + suffix;
    return name.length() <= 200 ? name : name.substring(name.length() - 200);
  }
}
