"""Tasks of benchmarks/compare.py: one module per task, the shared harness in harness.py."""
