"""Spark-side execution of engine operators: arrival order, key buckets and exchanges, derived
columns, merged inputs, references on executors."""
