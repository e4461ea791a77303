"""Training operators, one module per family: the objects its controller reads, the pods it
creates from a manifest with the labels it stamps, and which pod coordinates. Knowledge
only: reads no files. The registry (registry.py) lists them; base.py is the interface.
"""
