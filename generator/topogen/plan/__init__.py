"""Plan: per config group, the domain to confine its jobs to (or a refusal, with why)."""
