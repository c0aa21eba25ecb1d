"""What tests share about the fake LS they start: the CSRF token the ``fake_ls`` fixture expects."""

CSRF_TOKEN = "windsurf-api-csrf-fixed-token"
