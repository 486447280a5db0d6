"""The benchmarks, one module a measurement, each run from the repository root as `python -m benchmarks.NAME`
(`python -m benchmarks.run` for all the figures). Not shipped: the wheel holds pimem_index and datasette_pi_memory."""
