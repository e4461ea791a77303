"""topogen: co-locate training groups inside the network domain that allows their traffic.

Pipeline (one direction): sources -> model -> analysis -> plan -> render -> emit, with
the knowledge packages operators/ and cilium/ beside it (any stage may use them).
"""

from topogen import codecache, modulecache

__version__ = "0.1.0"
__all__ = ["__version__"]

codecache.install()  # before any module of topogen defines a dataclass
modulecache.install()  # before the first of topogen's modules is imported
