"""Benchmarks of the memory engine, shared by `phi bench` and the scripts in `bench/`."""
