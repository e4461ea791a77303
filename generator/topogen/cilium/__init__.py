"""What topogen knows of Cilium: identity label keys, entities, how its parser rewrites
selectors (and, to come, the agent's identity label filter). Knowledge only: reads no files.
"""
