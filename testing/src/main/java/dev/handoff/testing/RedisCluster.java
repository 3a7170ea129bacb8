package dev.handoff.testing;

import dev.handoff.core.RedisConnectionSpec;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.args.ClusterFailoverOption;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisClusterCRC16;
import redis.embedded.RedisExecProvider;

/**
 * A Redis Cluster of a test's own: three masters (slots 0-5460, 5461-10921, 10922-16383) and one replica each, six
 * {@code redis-server} processes of the embedded Redis 7.0.15 binary the other tests use, on free ports, keeping
 * nothing on disk but their cluster config files in a temporary directory. It is formed from Java ({@code CLUSTER
 * MEET}, {@code ADDSLOTSRANGE}, {@code REPLICATE}) and {@link #start()} returns once every node reports
 * {@code cluster_state:ok}, knows all six nodes and sees every replica attached, and every replica's link to its
 * master is up. The node timeout is one second, so a {@link #killMaster killed master}'s replica takes over within a
 * few seconds.
 *
 * <p>Start one per test class (a static field, {@code @BeforeAll} / {@code @AfterAll}): forming a cluster takes a
 * few seconds. {@link #close()} SIGKILLs every process by PID and deletes the directory; a failed start does too, and
 * so does a JVM shutdown hook if the test never closes it. Methods are safe to call from one test thread at a time.
 */
public final class RedisCluster implements AutoCloseable {

  /** Redis Cluster's fixed number of hash slots. */
  public static final int SLOTS = 16384;

  /**
   * Long enough that a node starved of CPU on a loaded machine is never failed over by the others on their own: a
   * failover happens when a test asks for it ({@link #awaitPromotion} forces it).
   */
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(5000);
  private static final Duration FORM_TIMEOUT = Duration.ofSeconds(60);
  private static final int MASTERS = 3;

  private final Path dir;
  private final List<ClusterNode> nodes = new ArrayList<>();
  private final Map<String, String> replicaAtKill = new ConcurrentHashMap<>();
  private final Thread shutdownHook = new Thread(this::killAll, "redis-cluster-shutdown");

  private RedisCluster(Path dir) {
    this.dir = dir;
  }

  /** Starts and forms a new cluster of three masters with one replica each. */
  public static RedisCluster start() {
    Path dir;
    try {
      dir = Files.createTempDirectory("handoff-redis-cluster-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the cluster's temporary directory", e);
    }
    RedisCluster cluster = new RedisCluster(dir);
    Runtime.getRuntime().addShutdownHook(cluster.shutdownHook);
    try {
      File binary = RedisExecProvider.defaultProvider().get();
      for (int i = 0; i < MASTERS * 2; i++) {
        cluster.nodes.add(ClusterNode.start(binary, dir, NODE_TIMEOUT));
      }
      cluster.form();
      return cluster;
    } catch (IOException e) {
      cluster.close();
      throw new UncheckedIOException("cannot extract the embedded redis-server binary", e);
    } catch (RuntimeException | Error e) {
      cluster.close();
      throw e;
    }
  }

  private void form() {
    ClusterNode first = nodes.get(0);
    for (ClusterNode node : nodes.subList(1, nodes.size())) {
      try (Jedis jedis = node.admin()) {
        jedis.clusterMeet(first.address().getHost(), first.address().getPort());
      }
    }
    Waits.until("all " + nodes.size() + " nodes know each other", FORM_TIMEOUT, () -> nodes.stream().allMatch(n -> {
      List<ClusterView.Entry> entries = view(n).entries();
      return entries.size() == nodes.size() && entries.stream().noneMatch(ClusterView.Entry::unhealthy);
    }));
    int per = SLOTS / MASTERS;
    for (int m = 0; m < MASTERS; m++) {
      int from = m * per;
      int to = m == MASTERS - 1 ? SLOTS - 1 : from + per - 1;
      try (Jedis jedis = nodes.get(m).admin()) {
        jedis.clusterAddSlotsRange(from, to);
      }
    }
    // A replica can only follow a master it sees as a master with slots: wait for the slots to propagate first.
    Waits.until("every node sees all " + SLOTS + " slots assigned", FORM_TIMEOUT,
        () -> nodes.stream().allMatch(n -> view(n).mastersWithSlots().size() == MASTERS));
    for (int r = 0; r < MASTERS; r++) {
      try (Jedis jedis = nodes.get(MASTERS + r).admin()) {
        jedis.clusterReplicate(nodes.get(r).id());
      }
    }
    Waits.until("cluster_state:ok, 3 masters and 3 attached replicas on every node", FORM_TIMEOUT, () -> {
      for (ClusterNode n : nodes) {
        ClusterView v = view(n);
        for (int r = 0; r < MASTERS; r++) {
          List<ClusterView.Entry> replicas = v.replicasOf(nodes.get(r).id());
          if (replicas.size() != 1 || !replicas.get(0).id().equals(nodes.get(MASTERS + r).id())) {
            return false;
          }
        }
        if (!info(n, "cluster_state").equals("ok")) {
          return false;
        }
      }
      return nodes.subList(MASTERS, nodes.size()).stream().allMatch(ClusterNode::alive)
          && nodes.subList(MASTERS, nodes.size()).stream().allMatch(RedisCluster::linkUp);
    });
  }

  /** The address of every node, masters and replicas, for a cluster client's seed list. */
  /** How handoff's builders reach this cluster: every live node as a seed. */
  public RedisConnectionSpec spec() {
    HostAndPort first = seeds().iterator().next();
    return RedisConnectionSpec.builder("redis://" + first.getHost() + ":" + first.getPort()).cluster(seeds()).build();
  }

  public Set<HostAndPort> seeds() {
    Set<HostAndPort> seeds = new LinkedHashSet<>();
    nodes.stream().filter(ClusterNode::alive).forEach(n -> seeds.add(n.address()));
    return seeds;
  }

  /** The masters that own slots now, in slot order (the first owns slot 0 until a slot moves). */
  public List<HostAndPort> masters() {
    return view(anyAlive()).mastersWithSlots().stream().map(ClusterView.Entry::address).toList();
  }

  /** The slot count of each master now, in {@link #masters()} order. */
  public List<Integer> slotCounts() {
    return view(anyAlive()).mastersWithSlots().stream().map(ClusterView.Entry::slotCount).toList();
  }

  /** The healthy replica of {@code master}. */
  public HostAndPort replicaOf(HostAndPort master) {
    ClusterView v = view(anyAlive());
    List<ClusterView.Entry> replicas = v.replicasOf(node(master).id());
    if (replicas.size() != 1) {
      throw new IllegalStateException(master + " has " + replicas.size() + " healthy replicas, not 1");
    }
    return replicas.get(0).address();
  }

  /** The master that owns {@code slot} now (during a migration: still the source). */
  public HostAndPort nodeForSlot(int slot) {
    if (slot < 0 || slot >= SLOTS) {
      throw new IllegalArgumentException("slot must be in 0.." + (SLOTS - 1) + ", was " + slot);
    }
    return view(anyAlive()).owner(slot)
        .orElseThrow(() -> new IllegalStateException("no healthy master owns slot " + slot))
        .address();
  }

  /** The master that owns the slot of {@code key} ({@code JedisClusterCRC16.getSlot}, hash tags honoured). */
  public HostAndPort nodeForKey(String key) {
    return nodeForSlot(JedisClusterCRC16.getSlot(key));
  }

  /** The PID of the node's process. */
  public long pid(HostAndPort node) {
    return node(node).pid();
  }

  /** A plain connection to one node (no redirections followed), for set-up and checks. The caller closes it. */
  public Jedis admin(HostAndPort node) {
    return node(node).admin();
  }

  /**
   * A new cluster client on {@link #seeds()}, RESP2, with Jedis's defaults otherwise (5 attempts, 2 s timeouts).
   * The caller closes it.
   */
  public RedisClusterClient newClient() {
    return RedisClusterClient.builder()
        .nodes(seeds())
        .clientConfig(DefaultJedisClientConfig.builder().resp2().build())
        .build();
  }

  /**
   * SIGSTOPs {@code node}'s process: it keeps its connections open and answers nothing, as a node stalled by the
   * machine would, until {@link #thaw}. Too short a freeze for the other nodes to fail it over (node timeout) is the
   * caller's to choose.
   */
  public void freeze(HostAndPort node) {
    node(node).signal("STOP");
  }

  /** SIGCONTs a node {@link #freeze} stopped. */
  public void thaw(HostAndPort node) {
    node(node).signal("CONT");
  }

  /**
   * SIGKILLs {@code master}'s process (a crash: no shutdown, no save, no {@code CLUSTER FAILOVER}). Its replica
   * takes over by itself once the other masters agree it failed; {@link #awaitPromotion} waits for that.
   */
  public void killMaster(HostAndPort master) {
    ClusterNode node = node(master);
    HostAndPort replica = replicaOf(master);
    replicaAtKill.put(node.id(), node(replica).id());
    node.kill();
  }

  /**
   * Waits until the replica {@code deadMaster} had when it was killed is a master on every living node's view, owns
   * the dead master's slots, and every living node reports {@code cluster_state:ok}; returns its address.
   */
  public HostAndPort awaitPromotion(HostAndPort deadMaster) {
    String replicaId = replicaAtKill.get(node(deadMaster).id());
    if (replicaId == null) {
      throw new IllegalStateException(deadMaster + " was not killed with killMaster");
    }
    ClusterNode replica = nodes.stream().filter(n -> n.id().equals(replicaId)).findFirst().orElseThrow();
    // Without waiting out the node timeout: FORCE takes over without the dead master, with the other masters' votes.
    try (Jedis jedis = replica.admin()) {
      jedis.clusterFailover(ClusterFailoverOption.FORCE);
    }
    Waits.until("replica " + replica + " of killed " + deadMaster + " is promoted", FORM_TIMEOUT,
        () -> nodes.stream().filter(ClusterNode::alive).allMatch(n -> {
          ClusterView v = view(n);
          return v.byId(replicaId).map(e -> e.master() && !e.unhealthy() && !e.slots().isEmpty()).orElse(false)
              && v.mastersWithSlots().size() == MASTERS
              && info(n, "cluster_state").equals("ok");
        }));
    return replica.address();
  }

  /** Moves {@code slot} and its keys to {@code toMaster}: {@link #beginMigration}, every key, {@code finish()}. */
  public void migrateSlot(int slot, HostAndPort toMaster) {
    beginMigration(slot, toMaster).finish();
  }

  /**
   * Starts moving {@code slot} to {@code toMaster}, as {@code redis-cli --cluster reshard} does: {@code CLUSTER
   * SETSLOT <slot> IMPORTING <source>} on the target, then {@code MIGRATING <target>} on the source. Until
   * {@link SlotMigration#finish()}, the source answers ASK for keys it no longer has.
   */
  public SlotMigration beginMigration(int slot, HostAndPort toMaster) {
    ClusterNode source = node(nodeForSlot(slot));
    ClusterNode target = node(toMaster);
    if (source == target) {
      throw new IllegalArgumentException("slot " + slot + " is on " + toMaster + " already");
    }
    try (Jedis t = target.admin(); Jedis s = source.admin()) {
      t.clusterSetSlotImporting(slot, source.id());
      s.clusterSetSlotMigrating(slot, target.id());
    }
    return new SlotMigration(this, slot, source, target);
  }

  /** Sets the slot's owner to the target on every master, then waits until every living node agrees. */
  void finishMigration(int slot, ClusterNode source, ClusterNode target) {
    // Target first, then source, as the Redis manual orders it: the target then never refuses the slot's clients.
    List<ClusterNode> order = new ArrayList<>(List.of(target, source));
    for (HostAndPort m : masters()) {
      ClusterNode n = node(m);
      if (!order.contains(n)) {
        order.add(n);
      }
    }
    for (ClusterNode n : order) {
      try (Jedis jedis = n.admin()) {
        jedis.clusterSetSlotNode(slot, target.id());
      }
    }
    Waits.until("every node sees slot " + slot + " on " + target, FORM_TIMEOUT,
        () -> nodes.stream().filter(ClusterNode::alive).allMatch(n -> view(n).owner(slot)
            .map(e -> e.id().equals(target.id())).orElse(false)));
  }

  /** The directory of the nodes' config files and logs (deleted by {@link #close()}). */
  public Path directory() {
    return dir;
  }

  /** SIGKILLs every node still running, waits for each to die, and deletes the directory. Idempotent. */
  @Override
  public synchronized void close() {
    killAll();
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException shuttingDown) {
      // the JVM is exiting and runs the hook itself
    }
    deleteDirectory();
  }

  private void killAll() {
    for (ClusterNode n : nodes) {
      if (n.alive()) {
        n.kill();
      }
    }
  }

  private void deleteDirectory() {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete the cluster directory " + dir, e);
    }
  }

  private ClusterNode node(HostAndPort address) {
    return nodes.stream().filter(n -> n.address().equals(address)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no node of this cluster at " + address));
  }

  private ClusterNode anyAlive() {
    return nodes.stream().filter(ClusterNode::alive).findFirst()
        .orElseThrow(() -> new IllegalStateException("no node of the cluster is running"));
  }

  private static ClusterView view(ClusterNode node) {
    try (Jedis jedis = node.admin()) {
      return ClusterView.parse(jedis.clusterNodes());
    }
  }

  private static String info(ClusterNode node, String field) {
    try (Jedis jedis = node.admin()) {
      return field(jedis.clusterInfo(), field);
    } catch (JedisException e) {
      return "";
    }
  }

  private static boolean linkUp(ClusterNode replica) {
    try (Jedis jedis = replica.admin()) {
      return field(jedis.info("replication"), "master_link_status").equals("up");
    }
  }

  static String field(String info, String name) {
    return info.lines().filter(l -> l.startsWith(name + ":")).findFirst()
        .map(l -> l.substring(name.length() + 1).trim()).orElse("");
  }
}
