"""The core entry points the CLI calls: analyze (sources -> analysis -> plan) and render."""
