"""Property-based conformance suites for Cascade gateways, keyed by invariant ID."""
