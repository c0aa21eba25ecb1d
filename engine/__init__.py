"""The reference engine: a Cascade gateway implementing the fixed behaviour the seeds describe."""
