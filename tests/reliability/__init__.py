"""Reliability and security tests: fuzzed input, faults, disconnects, runaway CLIs, secrets, stdout purity."""
