"""Mutation specs that pin each invariant family, and the runner that verifies them."""
