package dev.handoff.benchmarks.ledger;

/** The producers of one run, started: in this JVM, or in processes of their own for a multi-process shape. */
interface ProducerRun {

  /** Waits for every producer to stop. */
  void join();

  /** The first producer failure, or {@code null}. */
  Throwable failure();

  /** When the producers started writing ({@code nanoTime}); they stop the configured duration later. */
  long from();

  /**
   * Starts the producers of {@code config}'s first shape for its duration, writing as {@code mode} says; in this
   * JVM {@code pay} writes each transaction. Returns once they write (producer processes first start up).
   */
  static ProducerRun start(Bench.Config config, String jdbcUrl, ProducerProcess.Mode mode, String schema,
      String idPrefix, double rate, PacedProducers.Pay pay, PacedProducers.Committed committed) {
    Shape shape = config.shape();
    long durationNanos = config.duration().toNanos();
    if (shape.processes() > 1) {
      return new ProducerProcesses(shape, jdbcUrl, mode, schema, config.shards(), idPrefix, rate, durationNanos,
          config.pinned(), committed);
    }
    PacedProducers producers = new PacedProducers("bench-" + mode.name().toLowerCase() + "-producer-",
        shape.sessions(), shape.perTransaction(), rate, 0);
    long from = System.nanoTime();
    producers.start(from, from + durationNanos, pay, (base, count) -> BenchPayments.batch(idPrefix, base, count),
        committed);
    return new ProducerRun() {
      @Override
      public void join() {
        producers.join();
      }

      @Override
      public Throwable failure() {
        return producers.failure();
      }

      @Override
      public long from() {
        return from;
      }
    };
  }
}
