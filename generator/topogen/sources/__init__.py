"""Sources: read files (or a live cluster) into model objects. Nothing else touches YAML.

Modules: yamlio (safe parsing), objects (Kubernetes object shapes), nodes,
policies, podspec, workloads, profiles, loader (what topogen.yaml names).
"""
