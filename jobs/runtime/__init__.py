"""Where Spark runs: the session, cluster parallelism, code shipped to executors, the Python worker
daemon and the JVM's output."""
