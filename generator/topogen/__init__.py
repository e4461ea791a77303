"""topogen: co-locate training groups inside the network domain that allows their traffic.

Pipeline (one direction): sources -> model -> analysis -> plan -> render -> emit, with
the knowledge packages operators/ and cilium/ beside it (any stage may use them).
"""

# The start-up caches, in this order: the module cache first (topogen's other modules,
# the other caches among them, are read from it: modulecache.py and packfile.py are all
# Python compiles where it writes no .pyc), then the dataclasses' and the patterns'.
from topogen import modulecache

modulecache.install()  # before the first of topogen's other modules is imported

from topogen import codecache, patterncache  # noqa: E402

__version__ = "0.1.0"
__all__ = ["__version__"]

codecache.install()  # before any module of topogen defines a dataclass
patterncache.install()  # before any compiles a regular expression
