"""numba kernels: numpy arrays in, numpy arrays out, no spaCy."""

from .compile_notice import install as _install_compile_notice
from .shared_cache import install as _install_shared_cache

_install_compile_notice()
# before any kernel module is imported: numba picks a function's cache place
# when it is decorated
_install_shared_cache()
