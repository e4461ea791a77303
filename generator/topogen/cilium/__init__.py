"""What topogen knows of Cilium: the agent options that change verdicts, the identity
label filter, how a pod or a node becomes a security identity, entities, and how the
agent's parser rewrites selectors. Knowledge only: reads no files.
"""
